/* printf for packet handlers: formats into the switch's console register,
   which logs one line per newline with the simulated time and the core
   (docs/pspin.md). Supports %d %i %u %x %X %o %c %s %p %% with flags '-' '0',
   a width, and the l / ll / z length modifiers. No libc state is touched
   (tp holds the core id, not a thread pointer). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#define FABRICVP_CONSOLE ((volatile uint32_t *)0x1B206000)

/* picolibc may define these as macros */
#undef putchar
#undef puts
#undef printf

static void out(char c) { *FABRICVP_CONSOLE = (uint8_t)c; }

static void out_padded(const char *s, int len, int width, int left, char pad) {
  if (!left)
    for (int i = len; i < width; ++i) out(pad);
  for (int i = 0; i < len; ++i) out(s[i]);
  if (left)
    for (int i = len; i < width; ++i) out(' ');
}

int vprintf(const char *fmt, va_list ap) {
  int count = 0;
  for (; *fmt; ++fmt) {
    if (*fmt != '%') {
      out(*fmt);
      ++count;
      continue;
    }
    ++fmt;
    int left = 0;
    char pad = ' ';
    for (;; ++fmt) {
      if (*fmt == '-')
        left = 1;
      else if (*fmt == '0')
        pad = '0';
      else
        break;
    }
    int width = 0;
    while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
    int longs = 0;
    while (*fmt == 'l' || *fmt == 'z') {
      if (*fmt == 'l') ++longs;
      ++fmt;
    }
    char buf[24];
    int n = 0;
    switch (*fmt) {
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
      case 'p': {
        unsigned long long v;
        int neg = 0;
        const int is_signed = *fmt == 'd' || *fmt == 'i';
        if (*fmt == 'p') {
          v = (uintptr_t)va_arg(ap, void *);
        } else if (longs >= 2) {
          long long s = va_arg(ap, long long);
          v = (unsigned long long)s;
          if (is_signed && s < 0) neg = 1, v = 0ull - v;
        } else {
          long s = va_arg(ap, long);
          v = is_signed ? (unsigned long long)(long long)s : (unsigned long)s;
          if (is_signed && s < 0) neg = 1, v = 0ull - v;
        }
        const unsigned base = (*fmt == 'x' || *fmt == 'X' || *fmt == 'p') ? 16 : *fmt == 'o' ? 8 : 10;
        const char *digits = *fmt == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
        char tmp[24];
        int t = 0;
        do {
          tmp[t++] = digits[v % base];
          v /= base;
        } while (v);
        if (*fmt == 'p') tmp[t++] = 'x', tmp[t++] = '0';
        if (neg) tmp[t++] = '-';
        while (t) buf[n++] = tmp[--t];
        out_padded(buf, n, width, left, left ? ' ' : pad);
        count += n > width ? n : width;
        break;
      }
      case 'c':
        buf[0] = (char)va_arg(ap, int);
        out_padded(buf, 1, width, left, ' ');
        count += width > 1 ? width : 1;
        break;
      case 's': {
        const char *s = va_arg(ap, const char *);
        if (!s) s = "(null)";
        int len = 0;
        while (s[len]) ++len;
        out_padded(s, len, width, left, ' ');
        count += len > width ? len : width;
        break;
      }
      case '%':
        out('%');
        ++count;
        break;
      default: /* unknown conversion: print it as written */
        out('%');
        if (*fmt) out(*fmt);
        count += 2;
        if (!*fmt) return count;
    }
  }
  return count;
}

int printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vprintf(fmt, ap);
  va_end(ap);
  return n;
}

int puts(const char *s) {
  int n = 0;
  while (*s) out(*s++), ++n;
  out('\n');
  return n + 1;
}

int putchar(int c) {
  out((char)c);
  return c;
}
