/* motifcl-info: what the runtime sees and what it chose, and with --model FILE what a model
 * file is (architecture, sizes, tensor types, tokenizer) without loading its weights. Human
 * text by default, JSON with --json. Uses the public API only (the model through its
 * experimental section). Exit status: 0 with a device, 2 without one, 3 for a model file that
 * cannot be read. */
#define MOTIFCL_EXPERIMENTAL
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "motifcl.h"

static void print_features(const char *title, uint64_t bits, int json)
{
    int first = 1;
    printf(json ? "  \"%s\": [" : "%-20s", title);
    for (int bit = 0; bit < 64; bit++) {
        const char *name = mcl_feature_name(UINT64_C(1) << bit);
        if (!name || !(bits & (UINT64_C(1) << bit)))
            continue;
        printf(json ? "%s\"%s\"" : "%s%s", first ? "" : (json ? ", " : " "), name);
        first = 0;
    }
    printf(json ? "],\n" : "%s\n", first && !json ? "(none)" : "");
}

static void print_quirks(uint64_t bits, int json)
{
    int first = 1;
    printf(json ? "  \"quirks\": [" : "%-20s", "quirks");
    for (int bit = 0; bit < 64; bit++) {
        const char *name = mcl_quirk_name(UINT64_C(1) << bit);
        if (!name || !(bits & (UINT64_C(1) << bit)))
            continue;
        printf(json ? "%s\"%s\"" : "%s%s", first ? "" : (json ? ", " : " "), name);
        first = 0;
    }
    printf(json ? "],\n" : "%s\n", first && !json ? "(none)" : "");
}

static void json_string(const char *key, const char *value)
{
    printf("  \"%s\": \"", key);
    for (const char *p = value; *p; p++) {
        if (*p == '"' || *p == '\\')
            putchar('\\');
        if ((unsigned char)*p >= 0x20)
            putchar(*p);
    }
    printf("\",\n");
}

static void print_json(const mcl_device_info *d, const char *memory_json, const char *traits)
{
    printf("{\n");
    json_string("library_version", mcl_version_string());
    json_string("git_commit", mcl_git_commit());
    json_string("device", d->name);
    json_string("device_type", mcl_device_type_name(d->device_type));
    printf("  \"device_index\": %u,\n  \"vendor_id\": %u,\n  \"device_id\": %u,\n",
           d->device_index, d->vendor_id, d->device_id);
    json_string("driver_name", d->driver_name);
    json_string("driver_info", d->driver_info);
    printf("  \"driver_version_raw\": %u,\n", d->driver_version);
    printf("  \"api_version\": \"%u.%u.%u\",\n", d->api_version >> 22,
           (d->api_version >> 12) & 0x3ffu, d->api_version & 0xfffu);
    json_string("profile", d->profile);
    printf("  \"subgroup_size\": %u,\n  \"min_subgroup_size\": %u,\n  \"max_subgroup_size\": %u,\n",
           d->subgroup_size, d->min_subgroup_size, d->max_subgroup_size);
    printf("  \"max_storage_buffer_range\": %llu,\n  \"max_memory_allocation_size\": %llu,\n",
           (unsigned long long)d->max_storage_buffer_range,
           (unsigned long long)d->max_memory_allocation_size);
    printf("  \"min_storage_buffer_offset_alignment\": %llu,\n",
           (unsigned long long)d->min_storage_buffer_offset_alignment);
    printf("  \"max_compute_shared_memory_size\": %u,\n  \"max_compute_workgroup_invocations\": %u,\n",
           d->max_compute_shared_memory_size, d->max_compute_workgroup_invocations);
    printf("  \"timestamp_period_ns\": %g,\n  \"timestamp_valid_bits\": %u,\n",
           (double)d->timestamp_period_ns, d->timestamp_valid_bits);
    print_features("features_available", d->features_available, 1);
    print_features("features_enabled", d->features_enabled, 1);
    print_quirks(d->quirks, 1);
    printf("  \"memory_heaps\": [");
    for (uint32_t i = 0; i < d->memory_heap_count; i++)
        printf("%s\n    {\"size\": %llu, \"budget\": %llu, \"usage\": %llu, \"device_local\": %s}",
               i ? "," : "", (unsigned long long)d->memory_heaps[i].size,
               (unsigned long long)d->memory_heaps[i].budget,
               (unsigned long long)d->memory_heaps[i].usage,
               d->memory_heaps[i].device_local ? "true" : "false");
    printf("\n  ],\n  \"validation\": %s,\n  \"traits\": %s,\n  \"allocator\": %s}\n",
           d->validation ? "true" : "false", traits[0] ? traits : "null",
           memory_json ? memory_json : "null\n");
}

static void print_text(const mcl_device_info *d, const mcl_memory_stats *m, const char *traits)
{
    const double mib = 1024.0 * 1024.0;
    printf("MotifCL %s (commit %s)\n\n", mcl_version_string(), mcl_git_commit());
    printf("%-20s %s [%u]\n", "device", d->name, d->device_index);
    printf("%-20s %s, vendor 0x%04x, device 0x%04x\n", "type",
           mcl_device_type_name(d->device_type), d->vendor_id, d->device_id);
    printf("%-20s %s (%s), raw version %u\n", "driver", d->driver_name, d->driver_info,
           d->driver_version);
    printf("%-20s %u.%u.%u\n", "vulkan", d->api_version >> 22, (d->api_version >> 12) & 0x3ffu,
           d->api_version & 0xfffu);
    printf("%-20s %s\n", "device profile", d->profile);
    printf("%-20s %u (range %u..%u)\n", "subgroup size", d->subgroup_size, d->min_subgroup_size,
           d->max_subgroup_size);
    printf("%-20s %.1f MiB\n", "max storage range", d->max_storage_buffer_range / mib);
    printf("%-20s %.1f MiB\n", "max allocation", d->max_memory_allocation_size / mib);
    printf("%-20s %llu B\n", "storage alignment",
           (unsigned long long)d->min_storage_buffer_offset_alignment);
    printf("%-20s %u B shared, %u invocations\n", "workgroup", d->max_compute_shared_memory_size,
           d->max_compute_workgroup_invocations);
    printf("%-20s %g ns/tick, %u valid bits\n", "timestamps", (double)d->timestamp_period_ns,
           d->timestamp_valid_bits);
    print_features("features available", d->features_available, 0);
    print_features("features enabled", d->features_enabled, 0);
    print_quirks(d->quirks, 0);
    for (uint32_t i = 0; i < d->memory_heap_count; i++)
        printf("heap %-15u %.1f MiB%s, budget %.1f MiB, in use %.1f MiB\n", i,
               d->memory_heaps[i].size / mib, d->memory_heaps[i].device_local ? " device-local" : "",
               d->memory_heaps[i].budget / mib, d->memory_heaps[i].usage / mib);
    printf("%-20s %s\n", "validation", d->validation ? "on" : "off");
    printf("%-20s %s\n", "traits", traits[0] ? traits : "(none)");
    printf("%-20s blocks of %.0f MiB, tensors in memory type %u, staging in type %u, %s\n",
           "allocator", m->block_size / mib, m->tensor_memory_type, m->staging_memory_type,
           m->zero_copy ? "zero-copy transfers" : "staged transfers");
    printf("%-20s %.1f MiB in %llu tensors, %.1f MiB reserved in %llu blocks + %llu dedicated\n",
           "allocated", m->bytes_allocated / mib, (unsigned long long)m->allocation_count,
           m->bytes_reserved / mib, (unsigned long long)m->block_count,
           (unsigned long long)m->dedicated_count);
}

/* What a model file is: its info, its tensors counted by type, its tokenizer. */
static int print_model(mcl_context *ctx, const char *path, int json)
{
    mcl_model_desc desc = {.size = sizeof desc, .flags = MCL_MODEL_NO_WEIGHTS};
    mcl_model *model = NULL;
    mcl_status status = mcl_model_open(ctx, path, &desc, &model);
    if (status != MCL_SUCCESS) {
        fprintf(stderr, "motifcl-info: %s: %s: %s\n", path, mcl_status_string(status),
                mcl_context_last_error(ctx));
        return 3;
    }
    mcl_model_info mi = {.size = sizeof mi};
    mcl_model_file_info(model, &mi);
    /* Tensors by their type in the file. */
    const char *types[16];
    uint32_t counts[16], ntypes = 0, n = mcl_model_tensor_count(model);
    for (uint32_t i = 0; i < n; i++) {
        mcl_model_tensor_info ti = {.size = sizeof ti};
        if (mcl_model_tensor(model, i, &ti) != MCL_SUCCESS)
            continue;
        const char *type = ti.file_type ? ti.file_type : "unknown";
        uint32_t j = 0;
        while (j < ntypes && strcmp(types[j], type) != 0)
            j++;
        if (j == ntypes && ntypes < 16) {
            types[ntypes] = type;
            counts[ntypes++] = 0;
        }
        if (j < ntypes)
            counts[j]++;
    }
    if (json) {
        printf("{\n");
        json_string("model", path);
        json_string("format", mi.format);
        json_string("architecture", mi.architecture);
        json_string("name", mi.name);
        json_string("tokenizer", mi.tokenizer);
        json_string("pre_tokenizer", mi.pre_tokenizer);
        printf("  \"vocab\": %u, \"dim\": %u, \"layers\": %u, \"heads\": %u, \"kv_heads\": %u,\n"
               "  \"hidden\": %u, \"context_length\": %u, \"rope_theta\": %g, \"rope_scaling\": %u,\n"
               "  \"norm_eps\": %g, \"tied_output\": %u, \"qkv_bias\": %u, \"bos\": %d, \"eos\": %d,\n"
               "  \"parameters\": %llu, \"file_bytes\": %llu, \"tensors\": %u,\n"
               "  \"tensor_types\": {", mi.vocab, mi.dim, mi.layers, mi.heads, mi.kv_heads,
               mi.hidden, mi.context_length, (double)mi.rope_theta, mi.rope_scaling,
               (double)mi.norm_eps, mi.tied_output, mi.qkv_bias, mi.bos, mi.eos,
               (unsigned long long)mi.parameters, (unsigned long long)mi.file_bytes, n);
        for (uint32_t j = 0; j < ntypes; j++)
            printf("%s\"%s\": %u", j ? ", " : "", types[j], counts[j]);
        printf("}\n}\n");
    } else {
        printf("%-20s %s (%s)\n", "model", path, mi.format);
        printf("%-20s %s%s%s%s\n", "architecture", mi.architecture, mi.name[0] ? " (" : "",
               mi.name, mi.name[0] ? ")" : "");
        printf("%-20s vocab %u, width %u, %u layers, %u heads (%u key/value), feed-forward %u, "
               "context %u\n", "shape", mi.vocab, mi.dim, mi.layers, mi.heads, mi.kv_heads,
               mi.hidden, mi.context_length);
        printf("%-20s theta %g%s, RMSNorm eps %g, %s output%s\n", "rope and norms",
               (double)mi.rope_theta, mi.rope_scaling ? " (llama 3 frequency scaling)" : "",
               (double)mi.norm_eps, mi.tied_output ? "tied" : "separate",
               mi.qkv_bias ? ", q/k/v biases" : "");
        printf("%-20s %llu weights in %u tensors, %.1f MiB of file:", "size",
               (unsigned long long)mi.parameters, n, (double)mi.file_bytes / 1048576.0);
        for (uint32_t j = 0; j < ntypes; j++)
            printf(" %u %s", counts[j], types[j]);
        printf("\n%-20s %s%s%s%s, BOS %d, EOS %d\n", "tokenizer",
               mi.tokenizer[0] ? mi.tokenizer : "(none)", mi.pre_tokenizer[0] ? " (" : "",
               mi.pre_tokenizer, mi.pre_tokenizer[0] ? ")" : "", mi.bos, mi.eos);
    }
    mcl_model_close(model);
    return 0;
}

int main(int argc, char **argv)
{
    int json = 0;
    const char *model_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            model_path = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--json] [--model FILE]\n"
                            "Environment: MOTIFCL_DEVICE, MOTIFCL_DEVICE_PROFILE, "
                            "MOTIFCL_VALIDATION, MOTIFCL_DISABLE, MOTIFCL_FORCE, MOTIFCL_LOG and "
                            "the tuning switches (README, \"Environment\")\n",
                    argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 1;
        }
    }
    mcl_context *ctx = NULL;
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_status status = mcl_context_create(&desc, &ctx);
    if (status != MCL_SUCCESS) {
        if (json)
            printf("{\n  \"library_version\": \"%s\",\n  \"error\": \"%s\"\n}\n",
                   mcl_version_string(), mcl_status_string(status));
        else
            fprintf(stderr, "motifcl-info: no context: %s (run with MOTIFCL_LOG=info for "
                            "details)\n", mcl_status_string(status));
        return 2;
    }
    if (model_path) {
        int rc = print_model(ctx, model_path, json);
        mcl_context_destroy(ctx);
        return rc;
    }
    mcl_device_info info = {.size = sizeof info};
    mcl_context_device_info(ctx, &info);
    mcl_memory_stats memory = {.size = sizeof memory};
    mcl_context_memory_stats(ctx, &memory);
    char traits[2048] = "";
    mcl_context_traits_json(ctx, traits, sizeof traits, NULL);
    if (json) {
        size_t needed = 0;
        mcl_context_memory_json(ctx, NULL, 0, &needed);
        char *memory_json = malloc(needed);
        if (memory_json && mcl_context_memory_json(ctx, memory_json, needed, NULL) != MCL_SUCCESS) {
            free(memory_json);
            memory_json = NULL;
        }
        print_json(&info, memory_json, traits);
        free(memory_json);
    } else {
        print_text(&info, &memory, traits);
    }
    mcl_context_destroy(ctx);
    return 0;
}
