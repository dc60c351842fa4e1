#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define VK_NO_PROTOTYPES
#include <volk.h>
#include <volk.c>
int main(void) {
    if (volkInitialize() != VK_SUCCESS) return 1;
    VkApplicationInfo ai = {VK_STRUCTURE_TYPE_APPLICATION_INFO, 0, "coop", 0, 0, 0, VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, 0, 0, &ai};
    VkInstance inst; if (vkCreateInstance(&ci, 0, &inst)) return 2;
    volkLoadInstance(inst);
    uint32_t n = 8; VkPhysicalDevice pd[8]; vkEnumeratePhysicalDevices(inst, &n, pd);
    for (uint32_t d = 0; d < n; d++) {
        VkPhysicalDeviceProperties p; vkGetPhysicalDeviceProperties(pd[d], &p);
        printf("device %s\n", p.deviceName);
        uint32_t ne = 0; vkEnumerateDeviceExtensionProperties(pd[d], 0, &ne, 0);
        VkExtensionProperties *e = calloc(ne, sizeof *e); vkEnumerateDeviceExtensionProperties(pd[d], 0, &ne, e);
        int nv = 0;
        for (uint32_t i = 0; i < ne; i++) { if (!strcmp(e[i].extensionName, "VK_NV_cooperative_matrix")) nv = 1; } 
        for (uint32_t i = 0; i < ne; i++) if (strstr(e[i].extensionName, "cooperative") || strstr(e[i].extensionName, "integer_dot")) printf("  ext %s v%u\n", e[i].extensionName, e[i].specVersion);
        uint32_t c = 0;
        if (!nv) continue;
        vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd[d], &c, 0);
        VkCooperativeMatrixPropertiesNV *l = calloc(c, sizeof *l);
        for (uint32_t i = 0; i < c; i++) l[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
        vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd[d], &c, l);
        for (uint32_t i = 0; i < c; i++) printf("  NV M%u N%u K%u A%d B%d C%d D%d scope%d\n", l[i].MSize, l[i].NSize, l[i].KSize, l[i].AType, l[i].BType, l[i].CType, l[i].DType, l[i].scope);
    }
    return 0;
}
