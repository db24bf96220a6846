/* report_png.c — a small RGB image as a PNG data: URI, for the HTML
 * report's heatmaps.
 *
 * A heatmap drawn as one SVG element per cell cost tens of kilobytes per
 * map; as an image it costs four base64 bytes per cell, whatever the
 * errors look like.  The image is tiny (at most a few thousand pixels), so
 * the deflate stream uses stored (uncompressed) blocks: no compressor to
 * carry, and the PNG is still one any viewer reads.  The page stays
 * self-contained: a data: URI fetches nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* CRC-32 as PNG defines it, bit by bit: the images are a few kilobytes,
 * so a table would buy nothing. */
static uint32_t crc(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

static void be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* A growing byte buffer; a failed allocation marks it failed. */
typedef struct buf {
  unsigned char *p;
  size_t n, cap;
  int failed;
} buf;

static void put(buf *b, const void *src, size_t n) {
  if (b->failed || n == 0)
    return;
  if (b->n + n > b->cap) {
    size_t cap = (b->n + n) * 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) {
      b->failed = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void chunk(buf *b, const char *type, const unsigned char *data, size_t n) {
  unsigned char len[4], sum[4];
  be32(len, (uint32_t)n);
  put(b, len, 4);
  size_t at = b->n;
  put(b, type, 4);
  put(b, data, n);
  be32(sum, b->failed ? 0 : crc(b->p + at, n + 4));
  put(b, sum, 4);
}

static void base64(FILE *f, const unsigned char *p, size_t n) {
  static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    fputc(A[v >> 18 & 63], f);
    fputc(A[v >> 12 & 63], f);
    fputc(i + 1 < n ? A[v >> 6 & 63] : '=', f);
    fputc(i + 2 < n ? A[v & 63] : '=', f);
  }
}

int tn_rep_png_uri(FILE *f, const unsigned char *rgb, int w, int h) {
  if (w <= 0 || h <= 0)
    return -1;
  /* The filtered scanlines (filter 0: none) in one zlib stream of stored
   * blocks. */
  size_t row = 1 + (size_t)w * 3, raw_n = row * (size_t)h;
  buf z = {0}, png = {0};
  unsigned char hdr[2] = {0x78, 0x01};
  put(&z, hdr, 2);
  uint32_t s1 = 1, s2 = 0;
  size_t done = 0;
  unsigned char *raw = malloc(raw_n);
  if (!raw)
    return -1;
  for (int y = 0; y < h; y++) {
    raw[(size_t)y * row] = 0;
    memcpy(raw + (size_t)y * row + 1, rgb + (size_t)y * (size_t)w * 3, (size_t)w * 3);
  }
  for (size_t i = 0; i < raw_n; i++) {
    s1 = (s1 + raw[i]) % 65521u;
    s2 = (s2 + s1) % 65521u;
  }
  while (done < raw_n) {
    size_t n = raw_n - done > 65535 ? 65535 : raw_n - done;
    unsigned char bh[5] = {done + n == raw_n ? 1 : 0, (unsigned char)n, (unsigned char)(n >> 8),
                           (unsigned char)~n, (unsigned char)(~n >> 8)};
    put(&z, bh, 5);
    put(&z, raw + done, n);
    done += n;
  }
  unsigned char ad[4];
  be32(ad, s2 << 16 | s1);
  put(&z, ad, 4);
  free(raw);

  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  unsigned char ihdr[13] = {0};
  be32(ihdr, (uint32_t)w);
  be32(ihdr + 4, (uint32_t)h);
  ihdr[8] = 8; /* bits per channel */
  ihdr[9] = 2; /* RGB */
  put(&png, sig, 8);
  chunk(&png, "IHDR", ihdr, 13);
  if (!z.failed)
    chunk(&png, "IDAT", z.p, z.n);
  chunk(&png, "IEND", NULL, 0);
  int rc = z.failed || png.failed ? -1 : 0;
  if (rc == 0) {
    fputs("data:image/png;base64,", f);
    base64(f, png.p, png.n);
  }
  free(z.p);
  free(png.p);
  return rc;
}
