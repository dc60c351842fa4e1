#include "env.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *mcl_env(const char *name)
{
    const char *value = getenv(name);
    return value && *value ? value : NULL;
}

static int equals_nocase(const char *a, const char *b, size_t b_len)
{
    for (size_t i = 0; i < b_len; i++) {
        if (a[i] == '\0' || tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return 0;
    }
    return a[b_len] == '\0';
}

int mcl_env_log_level(void)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    const char *value = mcl_env("MOTIFCL_LOG");
    if (!value || strcmp(value, "0") == 0)
        return -1;
    for (int i = 0; i < 4; i++) {
        if (equals_nocase(value, names[i], strlen(names[i])))
            return i;
    }
    return 1;
}

int mcl_env_truthy(const char *name)
{
    static const char *const falsy[] = {"0", "false", "off", "no"};
    const char *value = mcl_env(name);
    if (!value)
        return 0;
    for (size_t i = 0; i < sizeof falsy / sizeof falsy[0]; i++) {
        if (equals_nocase(value, falsy[i], strlen(falsy[i])))
            return 0;
    }
    return 1;
}

int mcl_list_contains(const char *list, const char *word)
{
    if (!list || !word)
        return 0;
    size_t word_len = strlen(word);
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t len = strcspn(p, ", ");
        if (len == word_len) {
            size_t i = 0;
            while (i < len && tolower((unsigned char)p[i]) == tolower((unsigned char)word[i]))
                i++;
            if (i == len)
                return 1;
        }
        p += len;
    }
    return 0;
}

int mcl_contains_nocase(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return 1;
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}
