/* checkpoint.c — a small interim checkpoint file: "CARLOCK1", a chunk count, then per chunk
 * its name, type, shape, CRC32 of the raw bytes and the zlib-compressed bytes. Sizes are
 * checked against the file before anything is allocated. */
#include "traj/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"

static const char MAGIC[8] = "CARLOCK1";

typedef struct chunk_head {
    char name[CARLO_CHUNK_NAME];
    uint32_t type, crc;
    uint64_t rows, cols, zlen;
} chunk_head;

static size_t chunk_bytes(const carlo_chunk *c)
{
    return carlo_mulsize(carlo_mulsize((size_t)c->rows, (size_t)c->cols), carlo_dtype_size(c->type));
}

int traj_checkpoint_save(const char *path, const carlo_frame *f)
{
    size_t plen = strlen(path);
    char *tmp = carlo_malloc(plen + 16, "a file name");
    if (!tmp)
        return -1;
    snprintf(tmp, plen + 16, "%s.tmp%d", path, (int)getpid());
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        carlo_seterr("cannot write checkpoint %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    uint32_t n = (uint32_t)f->n;
    int bad = fwrite(MAGIC, 1, 8, out) != 8 || fwrite(&n, 4, 1, out) != 1;
    for (int i = 0; i < f->n && !bad; i++) {
        const carlo_chunk *c = &f->chunk[i];
        size_t raw = chunk_bytes(c);
        uLongf zlen = compressBound((uLong)raw);
        uint8_t *z = carlo_malloc(zlen, "a compressed chunk");
        if (!z) {
            bad = 2;
            break;
        }
        if (compress2(z, &zlen, c->data, (uLong)raw, 6) != Z_OK) {
            free(z);
            bad = 1;
            break;
        }
        chunk_head h;
        memset(&h, 0, sizeof h);
        memcpy(h.name, c->name, sizeof h.name);
        h.type = (uint32_t)c->type;
        h.rows = c->rows;
        h.cols = c->cols;
        h.zlen = zlen;
        h.crc = (uint32_t)crc32(0L, c->data, (uInt)raw);
        bad = fwrite(&h, sizeof h, 1, out) != 1 || fwrite(z, 1, zlen, out) != zlen;
        free(z);
    }
    if (!bad && (fflush(out) || fsync(fileno(out))))
        bad = 1;
    int saved_errno = errno;
    if (fclose(out))
        bad = bad ? bad : 1;
    if (!bad && rename(tmp, path)) {
        saved_errno = errno;
        bad = 1;
    }
    if (bad) {
        if (bad == 1)
            carlo_seterr("writing checkpoint %s failed: %s", path, strerror(saved_errno));
        unlink(tmp);
    }
    free(tmp);
    return bad ? -1 : 0;
}

int traj_checkpoint_load(const char *path, carlo_frame *out)
{
    carlo_frame_init(out);
    FILE *in = fopen(path, "rb");
    if (!in)
        return carlo_seterr("cannot open checkpoint %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(in), &st)) {
        fclose(in);
        return carlo_seterr("cannot stat %s: %s", path, strerror(errno));
    }
    uint64_t left = (uint64_t)st.st_size;
    char magic[8];
    uint32_t n;
    int rc = 0;
    if (left < 12 || fread(magic, 1, 8, in) != 8 || memcmp(magic, MAGIC, 8) ||
        fread(&n, 4, 1, in) != 1) {
        fclose(in);
        return carlo_seterr("%s is not a carlo checkpoint", path);
    }
    left -= 12;
    if (n > CARLO_FRAME_MAX) {
        fclose(in);
        return carlo_seterr("%s: corrupt checkpoint (%u chunks)", path, n);
    }
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        chunk_head h;
        if (left < sizeof h || fread(&h, sizeof h, 1, in) != 1) {
            rc = carlo_seterr("%s: checkpoint cut short in chunk %u", path, i);
            break;
        }
        left -= sizeof h;
        h.name[CARLO_CHUNK_NAME - 1] = 0;
        if (h.type >= CARLO_NTYPES || h.zlen > left) {
            rc = carlo_seterr("%s: corrupt checkpoint chunk '%s'", path, h.name);
            break;
        }
        size_t raw = carlo_mulsize(carlo_mulsize((size_t)h.rows, (size_t)h.cols),
                                   carlo_dtype_size((carlo_dtype)h.type));
        /* deflate never expands beyond 1032:1; a larger claim is corrupt */
        if (raw == SIZE_MAX || raw / 1032 > h.zlen + 64) {
            rc = carlo_seterr("%s: corrupt checkpoint chunk '%s' (size)", path, h.name);
            break;
        }
        uint8_t *z = carlo_malloc((size_t)h.zlen, "a compressed chunk");
        uint8_t *data = z ? carlo_malloc(raw, "a checkpoint chunk") : NULL;
        uLongf got = (uLongf)raw;
        if (!data || fread(z, 1, (size_t)h.zlen, in) != h.zlen ||
            uncompress(data, &got, z, (uLong)h.zlen) != Z_OK || got != raw ||
            (uint32_t)crc32(0L, data, (uInt)raw) != h.crc) {
            if (data)
                rc = carlo_seterr("%s: checkpoint chunk '%s' is corrupt (CRC or zlib)", path, h.name);
            else
                rc = -1;
            free(z);
            free(data);
            break;
        }
        free(z);
        left -= h.zlen;
        rc = carlo_frame_add_owned(out, h.name, (carlo_dtype)h.type, h.rows, h.cols, data);
    }
    fclose(in);
    if (rc)
        carlo_frame_free(out);
    return rc;
}
