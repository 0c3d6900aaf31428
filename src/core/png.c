/* png.c — see png.h. PNG layout: signature, IHDR, one IDAT of deflated filter-0 rows, IEND.
 * A write that fails removes the partial file. */
#include "core/png.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static int write_chunk(FILE *f, const char *type, const uint8_t *data, uint32_t len)
{
    uint8_t head[8];
    put32(head, len);
    memcpy(head + 4, type, 4);
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (len)
        crc = crc32(crc, data, len);
    uint8_t tail[4];
    put32(tail, (uint32_t)crc);
    return fwrite(head, 1, 8, f) != 8 || (len && fwrite(data, 1, len, f) != len) ||
           fwrite(tail, 1, 4, f) != 4;
}

int carlo_png_write(const char *path, int width, int height, const uint8_t *rgb)
{
    if (width < 1 || height < 1 || width > (1 << 24) / 3 || height > (1 << 24))
        return carlo_seterr("png: image size %d x %d out of range", width, height);
    size_t row = (size_t)width * 3 + 1, raw_len = row * (size_t)height;
    uint8_t *raw = carlo_malloc(raw_len, "a PNG image");
    if (!raw)
        return -1;
    for (int y = 0; y < height; y++) {
        raw[(size_t)y * row] = 0; /* filter: none */
        memcpy(raw + (size_t)y * row + 1, rgb + (size_t)y * width * 3, (size_t)width * 3);
    }
    uLongf zlen = compressBound((uLong)raw_len);
    uint8_t *z = carlo_malloc(zlen, "a compressed PNG image");
    if (!z) {
        free(raw);
        return -1;
    }
    int zrc = compress2(z, &zlen, raw, (uLong)raw_len, 6);
    free(raw);
    if (zrc != Z_OK || zlen > 0x7fffffffu) {
        free(z);
        return carlo_seterr("png: compression failed");
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(z);
        return carlo_seterr("png: cannot open %s for writing: %s", path, strerror(errno));
    }
    static const uint8_t sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    uint8_t ihdr[13];
    put32(ihdr, (uint32_t)width);
    put32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: RGB */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    struct stat st;
    int regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    int bad = fwrite(sig, 1, 8, f) != 8 || write_chunk(f, "IHDR", ihdr, 13) ||
              write_chunk(f, "IDAT", z, (uint32_t)zlen) || write_chunk(f, "IEND", NULL, 0);
    free(z);
    if (fclose(f) || bad) {
        int saved = errno;
        struct stat now; /* no partial image behind: remove the file, if it is still this one */
        char *real = regular ? realpath(path, NULL) : NULL;
        if (real && stat(real, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
            unlink(real);
        free(real);
        return carlo_seterr("png: writing %s failed: %s", path, strerror(saved));
    }
    return 0;
}

static void hsv(double h, double s, double v, uint8_t rgb[3])
{
    h = fmod(h, 1.0) * 6.0;
    int i = (int)h;
    double f = h - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    double r, g, b;
    switch (i) {
    case 0: r = v; g = t; b = p; break;
    case 1: r = q; g = v; b = p; break;
    case 2: r = p; g = v; b = t; break;
    case 3: r = p; g = q; b = v; break;
    case 4: r = t; g = p; b = v; break;
    default: r = v; g = p; b = q; break;
    }
    rgb[0] = (uint8_t)(255 * r + 0.5);
    rgb[1] = (uint8_t)(255 * g + 0.5);
    rgb[2] = (uint8_t)(255 * b + 0.5);
}

void carlo_state_color(int v, int q, uint8_t rgb[3])
{
    (void)q;
    if (v == 0) {
        rgb[0] = 30;
        rgb[1] = 40;
        rgb[2] = 110;
        return;
    }
    double h = fmod(0.13 + 0.6180339887498949 * v, 1.0);
    hsv(h, 0.65 + 0.3 * ((v * 7) % 3) / 2.0, 0.95 - 0.25 * ((v * 5) % 2), rgb);
}

void carlo_ramp_color(double x, uint8_t rgb[3])
{
    if (!(x >= 0)) x = 0;
    if (x > 1) x = 1;
    /* piecewise-linear through five anchors of a viridis-like ramp */
    static const double anchor[5][3] = {
        {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    double t = x * 4;
    int i = t >= 4 ? 3 : (int)t;
    double f = t - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (uint8_t)(anchor[i][c] + f * (anchor[i + 1][c] - anchor[i][c]) + 0.5);
}

int carlo_png_states(const char *path, const uint8_t *states, int rows, int cols, int q, int scale)
{
    if (scale < 1)
        scale = 1;
    int w = cols * scale, h = rows * scale;
    if (w < 1 || h < 1 || w > (1 << 24) / 3 || h > (1 << 24))
        return carlo_seterr("png: image size %d x %d out of range", w, h);
    uint8_t *rgb = carlo_malloc(carlo_mulsize((size_t)w * 3, (size_t)h), "a PNG image");
    if (!rgb)
        return -1;
    uint8_t lut[256][3];
    for (int v = 0; v < 256; v++)
        carlo_state_color(v, q, lut[v]);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            memcpy(rgb + ((size_t)y * w + x) * 3, lut[states[(size_t)(y / scale) * cols + x / scale]], 3);
    int rc = carlo_png_write(path, w, h, rgb);
    free(rgb);
    return rc;
}
