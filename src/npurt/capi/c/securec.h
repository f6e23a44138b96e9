/* npurt's securec.h: the bounds-checked C functions of Huawei's secure C library that CANN
 * samples use (memcpy_s, memset_s, strcpy_s, strncpy_s, strcat_s, sprintf_s, snprintf_s), as
 * inline functions with the library's return codes (EOK 0, EINVAL, ERANGE). */
#ifndef NPURT_SECUREC_H_
#define NPURT_SECUREC_H_
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef EOK
#define EOK 0
#endif
typedef int errno_t;

static inline errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count)
{
    if (dest == NULL || src == NULL) return EINVAL;
    if (count > destMax) return ERANGE;
    memmove(dest, src, count);
    return EOK;
}

static inline errno_t memmove_s(void *dest, size_t destMax, const void *src, size_t count)
{
    return memcpy_s(dest, destMax, src, count);
}

static inline errno_t memset_s(void *dest, size_t destMax, int c, size_t count)
{
    if (dest == NULL) return EINVAL;
    if (count > destMax) return ERANGE;
    memset(dest, c, count);
    return EOK;
}

static inline errno_t strcpy_s(char *dest, size_t destMax, const char *src)
{
    if (dest == NULL || src == NULL) return EINVAL;
    size_t n = strlen(src);
    if (n + 1 > destMax) { if (destMax) dest[0] = 0; return ERANGE; }
    memcpy(dest, src, n + 1);
    return EOK;
}

static inline errno_t strncpy_s(char *dest, size_t destMax, const char *src, size_t count)
{
    if (dest == NULL || src == NULL) return EINVAL;
    size_t n = strnlen(src, count);
    if (n + 1 > destMax) { if (destMax) dest[0] = 0; return ERANGE; }
    memcpy(dest, src, n);
    dest[n] = 0;
    return EOK;
}

static inline errno_t strcat_s(char *dest, size_t destMax, const char *src)
{
    if (dest == NULL || src == NULL) return EINVAL;
    size_t a = strnlen(dest, destMax), b = strlen(src);
    if (a + b + 1 > destMax) return ERANGE;
    memcpy(dest + a, src, b + 1);
    return EOK;
}

static inline int vsnprintf_s(char *dest, size_t destMax, size_t count, const char *format, va_list ap)
{
    if (dest == NULL || format == NULL || destMax == 0) return -1;
    size_t limit = count + 1 < destMax ? count + 1 : destMax;
    int n = vsnprintf(dest, limit, format, ap);
    return (n < 0 || (size_t)n >= limit) ? -1 : n;
}

static inline int snprintf_s(char *dest, size_t destMax, size_t count, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf_s(dest, destMax, count, format, ap);
    va_end(ap);
    return n;
}

static inline int sprintf_s(char *dest, size_t destMax, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf_s(dest, destMax, destMax - 1, format, ap);
    va_end(ap);
    return n;
}
#endif
