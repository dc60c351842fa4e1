/* Internal side of recorded sequences (graphs), used by the stream while capturing. */
#ifndef MCL_VK_GRAPH_H
#define MCL_VK_GRAPH_H

#include "context.h"

VkCommandBuffer mcl_graph_cmd(const mcl_graph *graph);
mcl_desc_pools *mcl_graph_desc_pools(mcl_graph *graph);
/* Note that the graph uses these tensors: they stay alive while it exists. */
void mcl_graph_use(mcl_graph *graph, mcl_tensor *const *tensors, uint32_t count);
void mcl_graph_count_dispatch(mcl_graph *graph);
/* Destroy every graph of the context (at context destruction). */
void mcl_graphs_destroy_all(mcl_context *ctx);

#endif
