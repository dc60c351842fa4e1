/* Element-wise operations: binary arithmetic with broadcasting (binary_f32.comp, which also
 * runs SwiGLU's silu(gate) * up), and the unary maps scale and activations (unary_f32.comp).
 * Both kernels take whole vec4s where alignment allows and walk the tensor with a grid-stride
 * loop. */
#include "../vk/runtime.h"
#include "ops_internal.h"

/* Push constants of binary_f32.comp. */
typedef struct binary_push {
    uint32_t n;
    uint32_t n4;
    uint32_t pad[2];       /* uvec4 members start on 16 bytes */
    uint32_t shape[4];     /* collapsed extents, innermost first */
    uint32_t bstride[4];   /* b's element stride per collapsed dimension, 0 = broadcast */
} binary_push;

/* Push constants of unary_f32.comp. */
typedef struct unary_push {
    uint32_t n;
    uint32_t n4;
    float alpha;
    float beta;
} unary_push;

/* Values of binary_f32.comp's OP constant beyond mcl_binary_op. */
#define BINARY_OP_SILU_MUL 4u

/* Values of unary_f32.comp's OP constant. */
enum { UNARY_SCALE = 0, UNARY_RELU = 1, UNARY_GELU = 2, UNARY_SILU = 3, UNARY_SIGMOID = 4 };

/* Workgroups beyond this make no difference to a grid-stride loop, and it stays below the
 * 65535 maxComputeWorkGroupCount[0] that Vulkan guarantees. 65535 groups of 256 are 16.7M
 * invocations, far more than any GPU keeps in flight, so the loop does not serialise. */
#define MCL_MAX_ELEMENTWISE_GROUPS 65535u


/* Elements of `t`, or a failure when the kernels' 32-bit indices cannot reach them all. */
static mcl_status element_count(mcl_context *ctx, const char *op, const mcl_tensor *t,
                                uint32_t *n)
{
    int64_t numel = mcl_tensor_numel(t);
    if (numel > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: more than 2^32-1 elements", op);
    *n = (uint32_t)numel;
    return MCL_SUCCESS;
}

static uint32_t group_count(uint64_t invocations, uint32_t local_size)
{
    uint64_t groups = (invocations + local_size - 1) / local_size;
    if (groups == 0)
        groups = 1;
    return groups > MCL_MAX_ELEMENTWISE_GROUPS ? MCL_MAX_ELEMENTWISE_GROUPS : (uint32_t)groups;
}

/* b's broadcast onto out's shape, collapsed: adjacent dimensions that b either both follows
 * or both repeats merge into one, and dimensions of extent 1 vanish. Four dimensions
 * collapse to at most four alternating runs. Returns the number of collapsed dimensions. */
static uint32_t collapse_broadcast(const mcl_tensor *a, const mcl_tensor *b, uint32_t shape[4],
                                   uint32_t bstride[4])
{
    uint32_t dims = 0;
    int last_broadcast = -1;
    uint64_t b_elems = 1; /* b's elements inside the dimensions seen so far */
    for (uint32_t k = 0; k < a->ndim; k++) {
        uint32_t ad = a->ndim - 1 - k;
        uint64_t extent = (uint64_t)a->shape[ad];
        uint64_t b_extent = k < b->ndim ? (uint64_t)b->shape[b->ndim - 1 - k] : 1;
        if (extent == 1)
            continue;
        int broadcast = b_extent == 1;
        if (dims > 0 && broadcast == last_broadcast) {
            shape[dims - 1] *= (uint32_t)extent;
        } else {
            shape[dims] = (uint32_t)extent;
            bstride[dims] = broadcast ? 0 : (uint32_t)b_elems;
            dims++;
        }
        if (!broadcast)
            b_elems *= b_extent;
        last_broadcast = broadcast;
    }
    if (dims == 0) {
        shape[0] = 1;
        bstride[0] = 1;
        dims = 1;
    }
    for (uint32_t k = dims; k < 4; k++) {
        shape[k] = 1;
        bstride[k] = 0;
    }
    return dims;
}

/* Record binary_f32.comp over out = a (op) b, the arguments already checked. */
static mcl_status dispatch_binary(mcl_context *ctx, uint32_t op, const mcl_tensor *a,
                                  const mcl_tensor *b, mcl_tensor *out, uint32_t n)
{
    binary_push push = {.n = n};
    uint32_t dims = collapse_broadcast(a, b, push.shape, push.bstride);
    /* A vec4 must not straddle the innermost dimension, where b's index jumps. */
    int vec4 = dims == 1 || push.shape[0] % 4 == 0;
    push.n4 = vec4 ? n / 4 : 0;

    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_BINARY_F32,
        .binding_count = 3,
        .push_size = sizeof push,
        .spec_count = 3,
        .spec = {op, (uint32_t)vec4, dims},
    };
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint64_t work = vec4 ? push.n4 : n; /* the tail after the vec4s is grid-strided too */
    mcl_tensor *reads[2] = {(mcl_tensor *)a, (mcl_tensor *)b};
    return mcl_dispatch(ctx, kernel, reads, 2, &out, 1, &push,
                               group_count(work, mcl_kernel_local_size(kernel)), 1, 1);
}

/* mcl_binary under the name the caller used, for its messages. */
static mcl_status binary(mcl_context *ctx, const char *name, mcl_binary_op op,
                         const mcl_tensor *a, const mcl_tensor *b, mcl_tensor *out)
{
    const mcl_tensor *t[3] = {a, b, out};
    mcl_status status = mcl_ops_check_f32(ctx, name, t, 3);
    if (status != MCL_SUCCESS)
        return status;
    if ((unsigned)op > MCL_BINARY_DIV)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: unknown op %d", name, (int)op);
    if (!mcl_tensor_same_shape(a, out))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: out must have a's shape", name);
    if (b->ndim > a->ndim)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: b has more dimensions than a",
                        name);
    for (uint32_t k = 0; k < b->ndim; k++) {
        int64_t bd = b->shape[b->ndim - 1 - k], ad = a->shape[a->ndim - 1 - k];
        if (bd != ad && bd != 1)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "%s: b's dimension %u (%lld) neither equals a's (%lld) nor is 1",
                            name, b->ndim - 1 - k, (long long)bd, (long long)ad);
    }
    uint32_t n = 0;
    if ((status = element_count(ctx, name, a, &n)) != MCL_SUCCESS)
        return status;
    return dispatch_binary(ctx, (uint32_t)op, a, b, out, n);
}

mcl_status mcl_binary(mcl_context *ctx, mcl_binary_op op, const mcl_tensor *a,
                      const mcl_tensor *b, mcl_tensor *out)
{
    return binary(ctx, "mcl_binary", op, a, b, out);
}

mcl_status mcl_add(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *b, mcl_tensor *out)
{
    return binary(ctx, "mcl_add", MCL_BINARY_ADD, a, b, out);
}

mcl_status mcl_swiglu(mcl_context *ctx, const mcl_tensor *gate, const mcl_tensor *up,
                      mcl_tensor *out)
{
    const mcl_tensor *t[3] = {gate, up, out};
    mcl_status status = mcl_ops_check_f32(ctx, "mcl_swiglu", t, 3);
    if (status != MCL_SUCCESS)
        return status;
    if (!mcl_tensor_same_shape(gate, up) || !mcl_tensor_same_shape(gate, out))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_swiglu: gate, up and out must have the same shape");
    uint32_t n = 0;
    if ((status = element_count(ctx, "mcl_swiglu", gate, &n)) != MCL_SUCCESS)
        return status;
    return dispatch_binary(ctx, BINARY_OP_SILU_MUL, gate, up, out, n);
}

mcl_status mcl_swiglu_q8(mcl_context *ctx, mcl_tensor *gate, mcl_tensor *up, mcl_tensor *act)
{
    const mcl_tensor *t[2] = {gate, up};
    mcl_status status = mcl_ops_check_f32(ctx, "mcl_swiglu_q8", t, 2);
    if (status != MCL_SUCCESS)
        return status;
    if (!act || act->ctx != ctx || act->dtype != MCL_DTYPE_I32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_swiglu_q8: act is i32 of ctx");
    uint32_t n = 0;
    if ((status = element_count(ctx, "mcl_swiglu_q8", gate, &n)) != MCL_SUCCESS)
        return status;
    uint32_t blocks = n / 32;
    if (!mcl_tensor_same_shape(gate, up) || gate->shape[gate->ndim - 1] % 32 != 0 ||
        act->nbytes < (uint64_t)blocks * 10 * 4)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_swiglu_q8: gate and up of one shape, rows a multiple of 32 long, "
                        "act of %u blocks", blocks);
    mcl_kernel_desc desc = {.id = MCL_KERNEL_SWIGLU_Q8_F32, .binding_count = 3,
                            .push_size = sizeof blocks, .local_size_x = 256};
    const mcl_kernel *kernel;
    if ((status = mcl_kernel_get(ctx, &desc, &kernel)) != MCL_SUCCESS)
        return status;
    uint32_t size = mcl_kernel_local_size(kernel);
    if (size % 8 != 0)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_swiglu_q8: a workgroup of %u", size);
    /* Eight invocations a block; the kernel loops over what the grid leaves. */
    uint64_t groups = ((uint64_t)blocks * 8 + size - 1) / size;
    if (groups > 65535)
        groups = 65535;
    mcl_tensor *reads[2] = {gate, up};
    return mcl_dispatch(ctx, kernel, reads, 2, &act, 1, &blocks, (uint32_t)groups, 1, 1);
}

/* Record unary_f32.comp over out = f(x) after the common checks. */
static mcl_status unary(mcl_context *ctx, const char *name, uint32_t op, const mcl_tensor *x,
                        float alpha, float beta, mcl_tensor *out)
{
    const mcl_tensor *t[2] = {x, out};
    mcl_status status = mcl_ops_check_f32(ctx, name, t, 2);
    if (status != MCL_SUCCESS)
        return status;
    if (!mcl_tensor_same_shape(x, out))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: out must have x's shape", name);
    unary_push push = {.alpha = alpha, .beta = beta};
    if ((status = element_count(ctx, name, x, &push.n)) != MCL_SUCCESS)
        return status;
    push.n4 = push.n / 4;
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_UNARY_F32,
        .binding_count = 2,
        .push_size = sizeof push,
        .spec_count = 1,
        .spec = {op},
    };
    const mcl_kernel *kernel;
    if ((status = mcl_kernel_get(ctx, &desc, &kernel)) != MCL_SUCCESS)
        return status;
    uint64_t work = push.n4 ? push.n4 : push.n;
    mcl_tensor *read = (mcl_tensor *)x;
    return mcl_dispatch(ctx, kernel, &read, 1, &out, 1, &push,
                               group_count(work, mcl_kernel_local_size(kernel)), 1, 1);
}

mcl_status mcl_scale(mcl_context *ctx, const mcl_tensor *x, float alpha, float beta,
                     mcl_tensor *out)
{
    return unary(ctx, "mcl_scale", UNARY_SCALE, x, alpha, beta, out);
}

mcl_status mcl_sigmoid(mcl_context *ctx, const mcl_tensor *x, mcl_tensor *out)
{
    return unary(ctx, "mcl_sigmoid", UNARY_SIGMOID, x, 0.0f, 0.0f, out);
}

mcl_status mcl_activate(mcl_context *ctx, mcl_activation act, const mcl_tensor *x,
                        mcl_tensor *out)
{
    static const uint32_t ops[] = {
        [MCL_ACTIVATION_RELU] = UNARY_RELU,
        [MCL_ACTIVATION_GELU] = UNARY_GELU,
        [MCL_ACTIVATION_SILU] = UNARY_SILU,
    };
    if (ctx && (unsigned)act >= sizeof ops / sizeof ops[0])
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_activate: unknown activation %d",
                        (int)act);
    return unary(ctx, "mcl_activate", ctx ? ops[act] : 0, x, 0.0f, 0.0f, out);
}
