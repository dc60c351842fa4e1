/* motifcl-isa: compile kernel variants with a chosen Vulkan driver and print what its compiler
 * made of them (registers, spills, code size, instruction counts), without running anything.
 *
 * Its use is the card nobody here has: Mesa's RADV creates a device for any AMD family it knows
 * without the hardware (RADV_FORCE_FAMILY, a "null" device that compiles but cannot run), so
 * the kernels the polaris profile chooses can be compiled by the RX 580's own compiler (ACO)
 * and checked for spills, occupancy and instruction counts:
 *
 *   MOTIFCL_DEVICE_PROFILE=polaris MOTIFCL_LOG=debug motifcl-bench quant ... 2> log.txt
 *   RADV_FORCE_FAMILY=polaris10 VK_ICD_FILENAMES=.../radeon_icd.x86_64.json \
 *       motifcl-isa --device POLARIS log.txt
 *
 * Input: lines holding "kernel <name> [x=<local size>,<constant 1>,...]", as the library's
 * debug log writes them when it creates a pipeline (anything else on a line is ignored).
 * Each distinct variant is compiled once, with constant 0 the workgroup's x size and constant i
 * the i-th value after it, against a layout of eight storage buffers and 128 bytes of push
 * constants (a superset of every kernel's interface).
 *
 * Options: --device SUBSTR (the first device whose name holds SUBSTR; default: the first),
 * --isa DIR (write each variant's disassembly to DIR/<name>-<constants>.txt), --witness-dir
 * DIR (write motifcl-isa.json there), --allow-spills (spilled registers are reported, not
 * failed), --module NAME=FILE (compile the SPIR-V in FILE for kernel NAME instead of the
 * embedded module: a shader being changed, compiled with glslangValidator -V). Exit status:
 * 0 when every variant compiled without spills, 1 otherwise or when the input names no
 * kernel, 2 without a usable device. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_info.h"
#include "spirv_modules.h"
#include "volk.h"
#include "witness.h"

#define ISA_MAX_VARIANTS 256
#define ISA_MAX_SPEC 16
#define ISA_BINDINGS 12 /* the library's most (MCL_MAX_BINDINGS): a kernel may use any of them */
#define ISA_PUSH_BYTES 128

/* Module i: the library's, or a tool's kernel (not in the library). */
static const mcl_spirv_module *module_at(int i)
{
    return mcl_spirv_modules[i].word_count ? &mcl_spirv_modules[i] : &mcl_spirv_tool_modules[i];
}

/* The embedded module named by name[0, len), or -1. */
static int module_index(const char *name, size_t len)
{
    for (int i = 0; i < MCL_KERNEL_COUNT; i++) {
        const char *n = module_at(i)->name;
        if (n && strlen(n) == len && strncmp(n, name, len) == 0)
            return i;
    }
    return -1;
}

/* --module NAME=FILE: SPIR-V read from a file for one kernel. */
static int override_module = -1;
static uint32_t *override_words;
static size_t override_count;

static int load_override(const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq) {
        fprintf(stderr, "motifcl-isa: --module wants NAME=FILE\n");
        return -1;
    }
    int m = module_index(arg, (size_t)(eq - arg));
    FILE *f = m >= 0 ? fopen(eq + 1, "rb") : NULL;
    if (!f) {
        fprintf(stderr, "motifcl-isa: cannot use %s\n", arg);
        return -1;
    }
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    rewind(f);
    override_words = size > 0 && size % 4 == 0 ? malloc((size_t)size) : NULL;
    override_count = override_words ? fread(override_words, 4, (size_t)size / 4, f) : 0;
    fclose(f);
    if (!override_words || override_count * 4 != (size_t)size) {
        fprintf(stderr, "motifcl-isa: %s is not SPIR-V words\n", eq + 1);
        return -1;
    }
    override_module = m;
    return 0;
}

typedef struct variant {
    int module;                 /* index of module_at() */
    uint32_t count;             /* constants, 0 included */
    uint32_t value[ISA_MAX_SPEC];
} variant;

/* One log line -> a variant; 0 when the line names none, -1 when it names one badly. */
static int parse_line(const char *line, variant *out)
{
    const char *k = strstr(line, "kernel ");
    if (!k)
        return 0;
    const char *name = k + 7, *end = name;
    while (*end && (isalnum((unsigned char)*end) || *end == '_'))
        end++;
    if (strncmp(end, " [x=", 4) != 0)
        return 0;
    int m = module_index(name, (size_t)(end - name));
    if (m < 0) {
        fprintf(stderr, "motifcl-isa: no embedded kernel named %.*s\n", (int)(end - name), name);
        return -1;
    }
    variant v = {.module = m};
    const char *p = end + 4;
    for (;;) {
        char *after;
        unsigned long value = strtoul(p, &after, 10);
        if (after == p || v.count == ISA_MAX_SPEC || value > UINT32_MAX) {
            fprintf(stderr, "motifcl-isa: bad constants in: %s", line);
            return -1;
        }
        v.value[v.count++] = (uint32_t)value;
        if (*after == ']')
            break;
        if (*after != ',') {
            fprintf(stderr, "motifcl-isa: bad constants in: %s", line);
            return -1;
        }
        p = after + 1;
    }
    *out = v;
    return 1;
}

static void variant_string(const variant *v, char *out, size_t size)
{
    int used = snprintf(out, size, "%s [x=%u", module_at(v->module)->name, v->value[0]);
    for (uint32_t i = 1; i < v->count && used > 0 && (size_t)used < size; i++)
        used += snprintf(out + used, size - (size_t)used, ",%u", v->value[i]);
    if (used > 0 && (size_t)used < size)
        snprintf(out + used, size - (size_t)used, "]");
}

static double stat_value(const VkPipelineExecutableStatisticKHR *st)
{
    switch (st->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        return (double)st->value.b32;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        return (double)st->value.i64;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        return (double)st->value.u64;
    default:
        return st->value.f64;
    }
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

typedef struct isa_device {
    VkInstance instance;
    VkDevice device;
    VkPipelineLayout layout;
    VkDescriptorSetLayout set_layout;
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    char driver[VK_MAX_DRIVER_NAME_SIZE + VK_MAX_DRIVER_INFO_SIZE + 2];
} isa_device;

static int device_open(isa_device *d, const char *want)
{
    if (volkInitialize() != VK_SUCCESS) {
        fprintf(stderr, "motifcl-isa: no Vulkan loader\n");
        return -1;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "motifcl-isa",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &app};
    if (vkCreateInstance(&ici, NULL, &d->instance) != VK_SUCCESS) {
        fprintf(stderr, "motifcl-isa: vkCreateInstance failed\n");
        return -1;
    }
    volkLoadInstance(d->instance);
    VkPhysicalDevice list[16];
    uint32_t n = 16;
    if (vkEnumeratePhysicalDevices(d->instance, &n, list) < 0 || n == 0) {
        fprintf(stderr, "motifcl-isa: no Vulkan device\n");
        return -1;
    }
    VkPhysicalDevice pd = VK_NULL_HANDLE;
    for (uint32_t i = 0; i < n && !pd; i++) {
        VkPhysicalDeviceDriverProperties drv = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
        VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                         .pNext = &drv};
        vkGetPhysicalDeviceProperties2(list[i], &p);
        if (want && !contains_nocase(p.properties.deviceName, want))
            continue;
        pd = list[i];
        snprintf(d->name, sizeof d->name, "%s", p.properties.deviceName);
        snprintf(d->driver, sizeof d->driver, "%s %s", drv.driverName, drv.driverInfo);
    }
    if (!pd) {
        fprintf(stderr, "motifcl-isa: no device named like \"%s\"\n", want);
        return -1;
    }
    uint32_t ext_count = 0;
    vkEnumerateDeviceExtensionProperties(pd, NULL, &ext_count, NULL);
    VkExtensionProperties *exts = calloc(ext_count ? ext_count : 1, sizeof *exts);
    int has_stats = 0;
    if (exts && vkEnumerateDeviceExtensionProperties(pd, NULL, &ext_count, exts) >= 0) {
        for (uint32_t i = 0; i < ext_count; i++)
            has_stats |= strcmp(exts[i].extensionName,
                                VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) == 0;
    }
    free(exts);
    if (!has_stats) {
        fprintf(stderr, "motifcl-isa: %s lacks %s\n", d->name,
                VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
        return -1;
    }
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                     .queueCount = 1,
                                     .pQueuePriorities = &priority};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR feature = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE};
    const char *ext = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &feature,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &queue,
                              .enabledExtensionCount = 1,
                              .ppEnabledExtensionNames = &ext};
    if (vkCreateDevice(pd, &dci, NULL, &d->device) != VK_SUCCESS) {
        fprintf(stderr, "motifcl-isa: vkCreateDevice failed on %s\n", d->name);
        return -1;
    }
    volkLoadDevice(d->device);
    VkDescriptorSetLayoutBinding bindings[ISA_BINDINGS];
    for (uint32_t i = 0; i < ISA_BINDINGS; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo sli = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = ISA_BINDINGS,
        .pBindings = bindings};
    VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                                .size = ISA_PUSH_BYTES};
    if (vkCreateDescriptorSetLayout(d->device, &sli, NULL, &d->set_layout) != VK_SUCCESS)
        return -1;
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &d->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &push};
    if (vkCreatePipelineLayout(d->device, &pli, NULL, &d->layout) != VK_SUCCESS)
        return -1;
    return 0;
}

static void device_close(isa_device *d)
{
    if (d->device) {
        if (d->layout)
            vkDestroyPipelineLayout(d->device, d->layout, NULL);
        if (d->set_layout)
            vkDestroyDescriptorSetLayout(d->device, d->set_layout, NULL);
        vkDestroyDevice(d->device, NULL);
    }
    if (d->instance)
        vkDestroyInstance(d->instance, NULL);
}

/* The disassembly (or whatever text representations the driver gives) of one variant. */
static void write_isa(const isa_device *d, VkPipeline pipeline, const char *dir,
                      const variant *v)
{
    char path[1024];
    int used = snprintf(path, sizeof path, "%s/%s-%u", dir, module_at(v->module)->name,
                        v->value[0]);
    for (uint32_t i = 1; i < v->count && used > 0 && (size_t)used < sizeof path; i++)
        used += snprintf(path + used, sizeof path - (size_t)used, "_%u", v->value[i]);
    if (used <= 0 || (size_t)used + 5 >= sizeof path)
        return;
    snprintf(path + used, sizeof path - (size_t)used, ".txt");
    VkPipelineExecutableInfoKHR exec = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                        .pipeline = pipeline};
    uint32_t count = 0;
    if (vkGetPipelineExecutableInternalRepresentationsKHR(d->device, &exec, &count, NULL) < 0)
        return;
    VkPipelineExecutableInternalRepresentationKHR *reps = calloc(count ? count : 1,
                                                                 sizeof *reps);
    if (!reps)
        return;
    for (uint32_t i = 0; i < count; i++)
        reps[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR;
    vkGetPipelineExecutableInternalRepresentationsKHR(d->device, &exec, &count, reps);
    for (uint32_t i = 0; i < count; i++) {
        reps[i].pData = reps[i].dataSize ? malloc(reps[i].dataSize) : NULL;
        if (!reps[i].pData)
            reps[i].dataSize = 0;
    }
    vkGetPipelineExecutableInternalRepresentationsKHR(d->device, &exec, &count, reps);
    FILE *f = fopen(path, "w");
    if (f) {
        for (uint32_t i = 0; i < count; i++) {
            fprintf(f, "=== %s: %s\n", reps[i].name, reps[i].description);
            if (reps[i].isText && reps[i].pData)
                fprintf(f, "%.*s\n", (int)reps[i].dataSize, (const char *)reps[i].pData);
        }
        fclose(f);
    } else {
        fprintf(stderr, "motifcl-isa: cannot write %s\n", path);
    }
    for (uint32_t i = 0; i < count; i++)
        free(reps[i].pData);
    free(reps);
}

/* Compile one variant and report it; 0 when it compiled without spills (or spills allowed). */
static int compile_variant(const isa_device *d, const variant *v, const char *isa_dir,
                           int allow_spills, mcl_witness *w)
{
    char label[256];
    variant_string(v, label, sizeof label);
    const mcl_spirv_module *spv = module_at(v->module);
    int own = v->module == override_module;
    VkShaderModuleCreateInfo smi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = (own ? override_count : spv->word_count) * sizeof(uint32_t),
        .pCode = own ? override_words : spv->words};
    VkShaderModule module;
    if (vkCreateShaderModule(d->device, &smi, NULL, &module) != VK_SUCCESS) {
        printf("%s: vkCreateShaderModule failed\n", label);
        mcl_witness_add_check(w, label, "compiled", 0, 1, 0);
        return 1;
    }
    VkSpecializationMapEntry entries[ISA_MAX_SPEC];
    for (uint32_t i = 0; i < v->count; i++)
        entries[i] = (VkSpecializationMapEntry){
            .constantID = i, .offset = i * (uint32_t)sizeof(uint32_t), .size = sizeof(uint32_t)};
    VkSpecializationInfo spec = {.mapEntryCount = v->count,
                                 .pMapEntries = entries,
                                 .dataSize = v->count * sizeof(uint32_t),
                                 .pData = v->value};
    VkComputePipelineCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
                 (isa_dir ? VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR : 0),
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = module,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = d->layout};
    VkPipeline pipeline;
    VkResult result = vkCreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &cpi, NULL,
                                               &pipeline);
    vkDestroyShaderModule(d->device, module, NULL);
    if (result != VK_SUCCESS) {
        printf("%s: vkCreateComputePipelines failed (%d)\n", label, (int)result);
        mcl_witness_add_check(w, label, "compiled", 0, 1, 0);
        return 1;
    }
    VkPipelineExecutableInfoKHR exec = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                        .pipeline = pipeline};
    VkPipelineExecutableStatisticKHR stats[48];
    uint32_t count = 48;
    for (uint32_t i = 0; i < count; i++)
        stats[i] = (VkPipelineExecutableStatisticKHR){
            .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    result = vkGetPipelineExecutableStatisticsKHR(d->device, &exec, &count, stats);
    if (result != VK_SUCCESS && result != VK_INCOMPLETE)
        count = 0;
    double spilled_vgprs = 0, spilled_sgprs = 0, scratch = 0;
    printf("%s:", label);
    for (uint32_t i = 0; i < count; i++) {
        double value = stat_value(&stats[i]);
        if (stats[i].format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR)
            printf(" %s=%llu", stats[i].name, (unsigned long long)stats[i].value.u64);
        else if (stats[i].format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR)
            printf(" %s=%lld", stats[i].name, (long long)stats[i].value.i64);
        else
            printf(" %s=%g", stats[i].name, value);
        printf("%s", i + 1 < count ? ";" : "");
        char name[sizeof label + 2 + VK_MAX_DESCRIPTION_SIZE];
        snprintf(name, sizeof name, "%s: %s", label, stats[i].name);
        mcl_witness_add_figure(w, name, value, "count", "measured");
        if (strcmp(stats[i].name, "Spilled VGPRs") == 0)
            spilled_vgprs = value;
        else if (strcmp(stats[i].name, "Spilled SGPRs") == 0)
            spilled_sgprs = value;
        else if (strcmp(stats[i].name, "Scratch size") == 0)
            scratch = value;
    }
    printf("\n");
    int spills = spilled_vgprs > 0 || spilled_sgprs > 0 || scratch > 0;
    int failed = !allow_spills && spills;
    if (spills)
        printf("%s: spills (%g VGPRs, %g SGPRs, %g bytes of scratch)\n", label, spilled_vgprs,
               spilled_sgprs, scratch);
    mcl_witness_add_check(w, label, "spilled registers", spilled_vgprs + spilled_sgprs, 0,
                          !spills);
    if (isa_dir)
        write_isa(d, pipeline, isa_dir, v);
    vkDestroyPipeline(d->device, pipeline, NULL);
    return failed;
}

int main(int argc, char **argv)
{
    const char *want = NULL, *isa_dir = NULL, *witness_dir = NULL, *input = NULL;
    int allow_spills = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            want = argv[++i];
        else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc)
            isa_dir = argv[++i];
        else if (strcmp(argv[i], "--witness-dir") == 0 && i + 1 < argc)
            witness_dir = argv[++i];
        else if (strcmp(argv[i], "--module") == 0 && i + 1 < argc) {
            if (load_override(argv[++i]) != 0)
                return 2;
        } else if (strcmp(argv[i], "--allow-spills") == 0)
            allow_spills = 1;
        else if (argv[i][0] != '-' && !input)
            input = argv[i];
        else {
            fprintf(stderr, "usage: motifcl-isa [--device SUBSTR] [--isa DIR] "
                            "[--witness-dir DIR] [--allow-spills] [--module NAME=FILE] "
                            "[LOG]\n");
            return 2;
        }
    }
    FILE *in = input ? fopen(input, "r") : stdin;
    if (!in) {
        fprintf(stderr, "motifcl-isa: cannot read %s\n", input);
        return 1;
    }
    static variant variants[ISA_MAX_VARIANTS];
    size_t nv = 0;
    int bad = 0;
    char line[4096];
    while (fgets(line, sizeof line, in)) {
        variant v;
        int got = parse_line(line, &v);
        bad |= got < 0;
        if (got <= 0)
            continue;
        int seen = 0;
        for (size_t i = 0; i < nv && !seen; i++)
            seen = variants[i].module == v.module && variants[i].count == v.count &&
                   memcmp(variants[i].value, v.value, v.count * sizeof v.value[0]) == 0;
        if (seen)
            continue;
        if (nv == ISA_MAX_VARIANTS) {
            fprintf(stderr, "motifcl-isa: more than %d variants\n", ISA_MAX_VARIANTS);
            bad = 1;
            break;
        }
        variants[nv++] = v;
    }
    if (in != stdin)
        fclose(in);
    if (nv == 0) {
        fprintf(stderr, "motifcl-isa: the input names no kernel variant\n");
        return 1;
    }

    isa_device d = {0};
    if (device_open(&d, want) != 0) {
        device_close(&d);
        return 2;
    }
    printf("device: %s (%s), commit %s\n", d.name, d.driver, mcl_build_commit);
    mcl_witness *w = mcl_witness_create("bench", "motifcl-isa", argc, argv);
    mcl_witness_set_note(w, "device", d.name);
    mcl_witness_set_note(w, "driver", d.driver);
    int failed = bad;
    for (size_t i = 0; i < nv; i++)
        failed |= compile_variant(&d, &variants[i], isa_dir, allow_spills, w);
    device_close(&d);
    if (witness_dir && mcl_witness_write(w, witness_dir, failed ? "failed" : "passed") != 0) {
        fprintf(stderr, "motifcl-isa: cannot write the witness into %s\n", witness_dir);
        failed = 1;
    }
    mcl_witness_destroy(w);
    free(override_words);
    printf("%zu variants, %s\n", nv, failed ? "FAILED" : "all compiled without spills");
    return failed ? 1 : 0;
}
