/* The sharded-checkpoint index of safetensors_index.h: the weight map checked and its
 * distinct shards sorted, and the list of files to open for a folder, an index or a file. */
#include "io/safetensors_index.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/text.h"
#include "core/alloc.h"

#define SHARD_SUFFIX ".safetensors"
#define INDEX_SUFFIX ".json"
/* Characters of a name shown in a message. */
#define NAME_SHOWN 80
/* Bytes read from the index file at a time. */
#define READ_CHUNK (64u << 10)

struct mcl_st_index {
    mcl_json *doc;
    const mcl_json_value *weight_map;
    const mcl_json_value *metadata;
    const char **shards; /* distinct, sorted */
    uint32_t n_shards;
};


static int ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* Why `name` is refused as a shard name, or NULL when it is acceptable. */
static const char *shard_name_problem(const char *name, size_t len)
{
    if (!name || len == 0)
        return "is empty";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f)
            return "contains a control character";
        if (c == '/' || c == '\\' || c == ':')
            return "contains a path separator";
        if (c == '.' && i + 1 < len && name[i + 1] == '.')
            return "contains \"..\"";
    }
    if (len <= strlen(SHARD_SUFFIX) || !ends_with(name, len, SHARD_SUFFIX))
        return "does not end in \"" SHARD_SUFFIX "\"";
    return NULL;
}

int mcl_st_shard_name_ok(const char *name, size_t len)
{
    return shard_name_problem(name, len) == NULL;
}

static int str_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

mcl_status mcl_st_index_parse(const void *data, uint64_t size, mcl_st_index **out, char *why,
                              size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out || (!data && size))
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    mcl_st_index *idx = mcl_mem_calloc(1, sizeof *idx);
    if (!idx)
        return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    char json_why[256];
    mcl_status s = mcl_json_parse(data, size, &idx->doc, json_why, sizeof json_why);
    if (s != MCL_SUCCESS) {
        mcl_text_fail(why, why_size, s, "index: %s", json_why);
        goto fail;
    }
    const mcl_json_value *root = mcl_json_root(idx->doc);
    idx->weight_map = mcl_json_find(root, "weight_map");
    if (mcl_json_kind_of(root) != MCL_JSON_OBJECT ||
        mcl_json_kind_of(idx->weight_map) != MCL_JSON_OBJECT) {
        s = mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "index: %s",
                     mcl_json_kind_of(root) != MCL_JSON_OBJECT ? "not an object"
                     : idx->weight_map ? "\"weight_map\" is not an object"
                                       : "no \"weight_map\"");
        goto fail;
    }
    idx->metadata = mcl_json_find(root, "metadata");
    if (mcl_json_is_null(idx->metadata))
        idx->metadata = NULL;
    if (idx->metadata && mcl_json_kind_of(idx->metadata) != MCL_JSON_OBJECT) {
        s = mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "index: \"metadata\" is %s, "
                     "not an object", mcl_json_kind_name(mcl_json_kind_of(idx->metadata)));
        goto fail;
    }
    uint32_t n = mcl_json_count(idx->weight_map);
    idx->shards = mcl_mem_malloc((n ? n : 1) * sizeof *idx->shards);
    if (!idx->shards) {
        s = mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++) {
        const mcl_json_value *v = mcl_json_at(idx->weight_map, i);
        size_t key_len, len;
        const char *key = mcl_json_key(v, &key_len);
        const char *shard = mcl_json_string(v, &len);
        const char *problem = shard ? shard_name_problem(shard, len) : "is not a string";
        if (problem) {
            char shown_key[NAME_SHOWN + 4], shown_shard[NAME_SHOWN + 4];
            mcl_text_show(key, key_len, NAME_SHOWN, shown_key, sizeof shown_key);
            mcl_text_show(shard ? shard : "", shard ? len : 0, NAME_SHOWN, shown_shard,
                          sizeof shown_shard);
            s = mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "index: weight_map \"%s\" "
                         "(byte %" PRIu64 "): shard name \"%s\" %s", shown_key,
                         mcl_json_offset(v), shown_shard, problem);
            goto fail;
        }
        idx->shards[i] = shard;
    }
    /* Shard names hold no NUL (control characters are refused), so strcmp orders them. */
    qsort(idx->shards, n, sizeof *idx->shards, str_cmp);
    uint32_t distinct = 0;
    for (uint32_t i = 0; i < n; i++)
        if (distinct == 0 || strcmp(idx->shards[distinct - 1], idx->shards[i]) != 0)
            idx->shards[distinct++] = idx->shards[i];
    idx->n_shards = distinct;
    *out = idx;
    return MCL_SUCCESS;

fail:
    mcl_st_index_free(idx);
    return s;
}

void mcl_st_index_free(mcl_st_index *idx)
{
    if (!idx)
        return;
    mcl_json_free(idx->doc);
    mcl_mem_free(idx->shards);
    mcl_mem_free(idx);
}

uint32_t mcl_st_index_tensor_count(const mcl_st_index *idx)
{
    return idx ? mcl_json_count(idx->weight_map) : 0;
}

int mcl_st_index_tensor_at(const mcl_st_index *idx, uint32_t i, const char **name,
                           const char **shard)
{
    const mcl_json_value *v = idx ? mcl_json_at(idx->weight_map, i) : NULL;
    if (!v)
        return 0;
    if (name)
        *name = mcl_json_key(v, NULL);
    if (shard)
        *shard = mcl_json_string(v, NULL);
    return 1;
}

const char *mcl_st_index_shard_of(const mcl_st_index *idx, const char *name)
{
    return idx ? mcl_json_string(mcl_json_find(idx->weight_map, name), NULL) : NULL;
}

uint32_t mcl_st_index_shard_count(const mcl_st_index *idx)
{
    return idx ? idx->n_shards : 0;
}

const char *mcl_st_index_shard_at(const mcl_st_index *idx, uint32_t i)
{
    return idx && i < idx->n_shards ? idx->shards[i] : NULL;
}

const mcl_json_value *mcl_st_index_metadata(const mcl_st_index *idx)
{
    return idx ? idx->metadata : NULL;
}

/* --- Files ------------------------------------------------------------------------------- */

/* "dir/name" (dir's trailing slashes dropped, but "/" kept), or name alone when dir_len is
 * 0. malloc'd; NULL when out of memory. */
static char *join(const char *dir, size_t dir_len, const char *name)
{
    while (dir_len > 1 && dir[dir_len - 1] == '/')
        dir_len--;
    size_t name_len = strlen(name);
    int slash = dir_len > 0 && dir[dir_len - 1] != '/';
    char *p = mcl_mem_malloc(dir_len + (size_t)slash + name_len + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, dir_len);
    if (slash)
        p[dir_len] = '/';
    memcpy(p + dir_len + (size_t)slash, name, name_len + 1);
    return p;
}

static int is_regular_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The whole file at `path`, at most MCL_ST_INDEX_MAX_BYTES. */
static mcl_status read_small_file(const char *path, unsigned char **out, size_t *size,
                                  char *why, size_t why_size)
{
    *out = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "cannot open %s", path);
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    mcl_status s = MCL_SUCCESS;
    for (;;) {
        if (len + READ_CHUNK > cap) {
            size_t next = cap ? cap * 2 : READ_CHUNK;
            unsigned char *grown = mcl_mem_realloc(buf, next);
            if (!grown) {
                s = mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory "
                             "reading %s", path);
                break;
            }
            buf = grown;
            cap = next;
        }
        size_t got = fread(buf + len, 1, READ_CHUNK, f);
        len += got;
        if (len > MCL_ST_INDEX_MAX_BYTES) {
            s = mcl_text_fail(why, why_size, MCL_ERROR_TOO_LARGE, "%s is larger than %u bytes",
                         path, MCL_ST_INDEX_MAX_BYTES);
            break;
        }
        if (got < READ_CHUNK) {
            if (ferror(f))
                s = mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "cannot read %s", path);
            break;
        }
    }
    fclose(f);
    if (s != MCL_SUCCESS) {
        mcl_mem_free(buf);
        return s;
    }
    *out = buf;
    *size = len;
    return MCL_SUCCESS;
}

static mcl_status list_one(const char *path, mcl_st_shards *out, char *why, size_t why_size)
{
    out->paths = mcl_mem_malloc(sizeof *out->paths);
    if (out->paths)
        out->paths[0] = join("", 0, path);
    if (!out->paths || !out->paths[0]) {
        mcl_mem_free(out->paths);
        out->paths = NULL;
        return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    out->count = 1;
    return MCL_SUCCESS;
}

static mcl_status list_index(const char *index_path, mcl_st_shards *out, char *why,
                             size_t why_size)
{
    unsigned char *text;
    size_t size;
    mcl_status s = read_small_file(index_path, &text, &size, why, why_size);
    if (s != MCL_SUCCESS)
        return s;
    mcl_st_index *idx = NULL;
    char parse_why[384];
    s = mcl_st_index_parse(text, size, &idx, parse_why, sizeof parse_why);
    mcl_mem_free(text);
    if (s != MCL_SUCCESS)
        return mcl_text_fail(why, why_size, s, "%s: %s", index_path, parse_why);
    const char *slash = strrchr(index_path, '/');
    size_t dir_len = slash ? (size_t)(slash - index_path) + (slash == index_path) : 0;
    uint32_t n = mcl_st_index_shard_count(idx);
    out->paths = mcl_mem_calloc(n ? n : 1, sizeof *out->paths);
    if (!out->paths) {
        mcl_st_index_free(idx);
        return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        out->paths[i] = join(index_path, dir_len, mcl_st_index_shard_at(idx, i));
        if (!out->paths[i]) {
            out->count = i;
            mcl_st_shards_free(out);
            mcl_st_index_free(idx);
            return mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        }
    }
    out->count = n;
    mcl_st_index_free(idx);
    return MCL_SUCCESS;
}

mcl_status mcl_st_shards_list(const char *path, mcl_st_shards *out, char *why,
                              size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!path || !out)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "NULL argument");
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "no file or folder %s",
                        path);
    size_t len = strlen(path);
    if (S_ISDIR(sb.st_mode)) {
        char *index = join(path, len, MCL_ST_INDEX_NAME);
        char *single = join(path, len, MCL_ST_SINGLE_NAME);
        mcl_status s;
        if (!index || !single)
            s = mcl_text_fail(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        else if (is_regular_file(index))
            s = list_index(index, out, why, why_size);
        else if (is_regular_file(single))
            s = list_one(single, out, why, why_size);
        else
            s = mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "%s holds neither "
                         MCL_ST_INDEX_NAME " nor " MCL_ST_SINGLE_NAME, path);
        mcl_mem_free(index);
        mcl_mem_free(single);
        return s;
    }
    if (!S_ISREG(sb.st_mode))
        return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "%s is neither a file nor "
                        "a folder", path);
    if (ends_with(path, len, INDEX_SUFFIX))
        return list_index(path, out, why, why_size);
    if (ends_with(path, len, SHARD_SUFFIX))
        return list_one(path, out, why, why_size);
    return mcl_text_fail(why, why_size, MCL_ERROR_INVALID_ARGUMENT, "%s is neither an index (.json) "
                    "nor a .safetensors file", path);
}

void mcl_st_shards_free(mcl_st_shards *shards)
{
    if (!shards)
        return;
    for (uint32_t i = 0; shards->paths && i < shards->count; i++)
        mcl_mem_free(shards->paths[i]);
    mcl_mem_free(shards->paths);
    shards->paths = NULL;
    shards->count = 0;
}
