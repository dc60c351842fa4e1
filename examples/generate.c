/* generate: the shortest whole program that generates text with a model file.
 *   generate MODEL.gguf "The capital of France is"
 * Greedy decoding of up to 64 tokens, printed as they come. */
#include <motifcl.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL PROMPT\n", argv[0]);
        return 1;
    }
    mcl_context *ctx;
    if (mcl_context_create(NULL, &ctx) != MCL_SUCCESS) {
        fprintf(stderr, "no Vulkan device\n");
        return 2;
    }
    mcl_model *model = NULL;
    mcl_session *session = NULL;
    int32_t ids[512];
    uint32_t n = 0;
    mcl_model_info info = {.size = sizeof info};
    if (mcl_model_open(ctx, argv[1], NULL, &model) != MCL_SUCCESS ||
        mcl_model_file_info(model, &info) != MCL_SUCCESS ||
        mcl_session_create(model, NULL, &session) != MCL_SUCCESS ||
        mcl_model_tokenize(model, argv[2], strlen(argv[2]), MCL_TOKENIZE_ADD_BOS, ids, 448,
                           &n) != MCL_SUCCESS ||
        mcl_session_feed(session, 0, ids, n, NULL) != MCL_SUCCESS) {
        fprintf(stderr, "%s\n", mcl_context_last_error(ctx));
        return 3;
    }
    printf("%s", argv[2]);
    for (int i = 0; i < 64; i++) {
        int32_t token;
        char piece[256];
        if (mcl_session_sample(session, 0, NULL, &token) != MCL_SUCCESS || token == info.eos ||
            mcl_session_feed(session, 0, &token, 1, NULL) != MCL_SUCCESS)
            break;
        /* A token's text alone, without the space prefix a first token would drop. */
        int32_t pair[2] = {ids[n - 1], token};
        char both[512];
        if (mcl_model_detokenize(model, pair, 1, piece, sizeof piece, NULL) != MCL_SUCCESS ||
            mcl_model_detokenize(model, pair, 2, both, sizeof both, NULL) != MCL_SUCCESS)
            break;
        fputs(both + strlen(piece), stdout);
        fflush(stdout);
        ids[n - 1] = token;
    }
    putchar('\n');
    mcl_session_destroy(session);
    mcl_model_close(model);
    mcl_context_destroy(ctx);
    return 0;
}
