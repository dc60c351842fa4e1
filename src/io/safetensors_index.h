/* Sharded Hugging Face checkpoints: the index file (model.safetensors.index.json) that maps
 * each tensor to the shard holding it, and the list of shard files to open for a checkpoint
 * given as a folder, an index file or one .safetensors file.
 *
 * The index is {"metadata": {...}, "weight_map": {"tensor name": "model-00001-of-00002.
 * safetensors", ...}}. Shard names are checked before anything joins them to a folder: not
 * empty, no '/', '\\' or ':', no "..", no control characters, ending in ".safetensors" (so
 * a crafted index cannot name a file outside the checkpoint's folder). Internal. */
#ifndef MCL_IO_SAFETENSORS_INDEX_H
#define MCL_IO_SAFETENSORS_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "io/json.h"
#include "motifcl.h"

/* The index file's name in a checkpoint folder, and the name of an unsharded checkpoint. */
#define MCL_ST_INDEX_NAME "model.safetensors.index.json"
#define MCL_ST_SINGLE_NAME "model.safetensors"
/* Largest index file read from disk by mcl_st_shards_list (real ones are well below 1 MB). */
#define MCL_ST_INDEX_MAX_BYTES (64u << 20)

typedef struct mcl_st_index mcl_st_index;

/* Whether `name` is acceptable as a shard's file name (the rules above). */
int mcl_st_shard_name_ok(const char *name, size_t len);

/* Parse an index file's `size` bytes at `data`. On success *out is the index (free it with
 * mcl_st_index_free). MCL_ERROR_INVALID_ARGUMENT with a message in `why` (may be NULL) for
 * malformed JSON, no "weight_map" object, a value that is not a string, a refused shard
 * name ("weight_map \"lm_head.weight\": shard name \"../x.safetensors\" contains \"..\""),
 * a "metadata" that is not an object, or NULL arguments; MCL_ERROR_TOO_LARGE and
 * MCL_ERROR_OUT_OF_HOST_MEMORY as mcl_json_parse. */
mcl_status mcl_st_index_parse(const void *data, uint64_t size, mcl_st_index **out, char *why,
                              size_t why_size);

/* Free an index. Accepts NULL. */
void mcl_st_index_free(mcl_st_index *idx);

/* Number of tensors in the weight map. */
uint32_t mcl_st_index_tensor_count(const mcl_st_index *idx);

/* Tensor i of the weight map (the file's order): its name and shard through the pointers
 * that are not NULL; 0 when i is out of range. */
int mcl_st_index_tensor_at(const mcl_st_index *idx, uint32_t i, const char **name,
                           const char **shard);

/* The shard holding tensor `name`, or NULL when the index does not list it. O(log n). */
const char *mcl_st_index_shard_of(const mcl_st_index *idx, const char *name);

/* Number of distinct shards. */
uint32_t mcl_st_index_shard_count(const mcl_st_index *idx);

/* Distinct shard i, in byte order of the names ("model-00001-of-00003.safetensors" first),
 * or NULL when i is out of range. */
const char *mcl_st_index_shard_at(const mcl_st_index *idx, uint32_t i);

/* The "metadata" object ({"total_size": ...}), or NULL when the index has none. */
const mcl_json_value *mcl_st_index_metadata(const mcl_st_index *idx);

/* The files of a checkpoint. */
typedef struct mcl_st_shards {
    uint32_t count;
    char **paths; /* count paths, each malloc'd; sorted as mcl_st_index_shard_at */
} mcl_st_shards;

/* List the safetensors files to open for `path`: a folder (its MCL_ST_INDEX_NAME if present,
 * else its MCL_ST_SINGLE_NAME), an index file (a path ending in ".json": its shards, in the
 * index's folder), or one file ending in ".safetensors" (itself). Paths are the folder and
 * the shard name joined with '/'. Whether the shards exist is left to the caller that opens
 * them. Free with mcl_st_shards_free. INVALID_ARGUMENT (no such path, a folder with neither
 * file, another kind of path, a malformed index, NULL arguments) with the reason in `why`;
 * TOO_LARGE (an index above MCL_ST_INDEX_MAX_BYTES); OUT_OF_HOST_MEMORY. */
mcl_status mcl_st_shards_list(const char *path, mcl_st_shards *out, char *why,
                              size_t why_size);

/* Free the paths of a list and zero it. Accepts NULL and a zeroed list. */
void mcl_st_shards_free(mcl_st_shards *shards);

#endif
