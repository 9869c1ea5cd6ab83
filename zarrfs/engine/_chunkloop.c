/* The Python pipeline's per-chunk loop for a batch of chunks, with the GIL let go once for
 * the whole batch (zarrfs/engine/chunkloop.py says when and why).
 *
 * Each chunk: its bytes (a local file opened below the store's root with openat2(2)
 * RESOLVE_BENEATH, read in one pread(2) and closed; or a span of a bytes object already
 * read), its compressor's header checked, decoded by the compressor numcodecs ships (its
 * function's address is given: this file holds no codec), and its selected region copied
 * into the output. Nothing here decides an outcome but "done": any other chunk (absent,
 * longer than expected, a header that says otherwise, a codec that refuses, a selection
 * this loop does not take) is reported, and the caller reads it again the careful way,
 * which says why. Never reads or writes past a buffer: every offset comes from a selection
 * checked against its array's shape, a file is read into a buffer of the size asked, a
 * codec writes into a destination of the chunk's decoded size and is told that size.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ZF_SYS_OPENAT2 437 /* the same number on every architecture */
#define ZF_RESOLVE_NO_MAGICLINKS 0x02
#define ZF_RESOLVE_BENEATH 0x08
#define ZF_MAXDIM 32 /* chunkloop.MAX_DIMS: arrays of more dimensions stay in Python */
/* as confine.py opens files: O_NONBLOCK, so that a FIFO (or a device) where a chunk file
 * should be is never waited for (a FIFO then fails its pread: ESPIPE) */
#define ZF_OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK)

struct zf_open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};

enum { CODEC_BLOSC = 1, CODEC_ZSTD = 2 };
enum { MODE_FILES = 0, MODE_SPANS = 1, MODE_RANGES = 2 };

/* outcomes other than done (>= 0: the stored bytes) and -errno */
#define ST_NOT_WHOLE (-1000) /* the file filled the buffer: it may hold more */
#define ST_HEADER (-1001)    /* the header does not state this chunk's sizes */
#define ST_DECODE (-1002)    /* the codec refused, or decoded another size */
#define ST_SELECTION (-1003) /* a selection this loop does not take */
#define ST_SOURCE (-1004)    /* a span that is not bytes, or lies outside them */

typedef int (*blosc_decompress_ctx_fn)(const void *, void *, size_t, int);
typedef size_t (*zstd_decompress_fn)(void *, size_t, const void *, size_t);
typedef unsigned long long (*zstd_content_size_fn)(const void *, size_t);
typedef size_t (*zstd_frame_size_fn)(const void *, size_t);

struct place {
    int status;             /* 0 until the loop runs; a selection refused: ST_SELECTION */
    const char *name;       /* files, ranges: the file's name */
    Py_ssize_t start;       /* ranges: where the chunk's bytes start in the file */
    const char *src;        /* spans: the chunk's stored bytes */
    Py_ssize_t src_len;
    char *dst;              /* the output's element the region starts at */
    Py_ssize_t src_off;     /* the chunk's element it starts at, in bytes */
    int nd;                 /* the region's dimensions (the chunk's sliced ones) */
    int in_place;           /* the region is the whole chunk, contiguous in the output */
    char *own;              /* a chunk to keep: decoded into this memory of its own */
    Py_ssize_t len[ZF_MAXDIM], sstride[ZF_MAXDIM], dstride[ZF_MAXDIM];
};

struct codec {
    int kind;
    void *decompress;
    void *content_size; /* zstd only */
    void *frame_size;   /* zstd only */
};

/* the region of ``target`` = (request, out): request[1] the chunk's selection (slices and
 * ints, one a chunk dimension), request[2] the output's (a slice an output dimension) */
static int
plan_place(struct place *p, PyObject *target, const Py_ssize_t *chunk_shape, int chunk_nd,
           const Py_ssize_t *chunk_strides, Py_buffer *out)
{
    PyObject *request = PyTuple_GET_ITEM(target, 0);
    if (!PyTuple_Check(request) || PyTuple_GET_SIZE(request) < 3)
        return ST_SELECTION;
    PyObject *csel = PyTuple_GET_ITEM(request, 1), *osel = PyTuple_GET_ITEM(request, 2);
    if (!PyTuple_Check(csel) || !PyTuple_Check(osel) || PyTuple_GET_SIZE(csel) != chunk_nd)
        return ST_SELECTION;
    Py_ssize_t n_out = PyTuple_GET_SIZE(osel);
    if (n_out != out->ndim || n_out > ZF_MAXDIM)
        return ST_SELECTION;
    Py_ssize_t src = 0, dst = 0;
    int j = 0;
    for (int k = 0; k < chunk_nd; k++) {
        PyObject *item = PyTuple_GET_ITEM(csel, k);
        if (PyLong_Check(item)) {
            Py_ssize_t i = PyLong_AsSsize_t(item);
            if (i == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return ST_SELECTION;
            }
            if (i < 0 || i >= chunk_shape[k])
                return ST_SELECTION;
            src += i * chunk_strides[k];
            continue;
        }
        if (!PySlice_Check(item) || j >= n_out)
            return ST_SELECTION;
        PyObject *oitem = PyTuple_GET_ITEM(osel, j);
        if (!PySlice_Check(oitem))
            return ST_SELECTION;
        Py_ssize_t start, stop, step, ostart, ostop, ostep;
        if (PySlice_Unpack(item, &start, &stop, &step) < 0 ||
            PySlice_Unpack(oitem, &ostart, &ostop, &ostep) < 0) {
            PyErr_Clear();
            return ST_SELECTION;
        }
        Py_ssize_t length = PySlice_AdjustIndices(chunk_shape[k], &start, &stop, step);
        Py_ssize_t olength = PySlice_AdjustIndices(out->shape[j], &ostart, &ostop, ostep);
        if (length != olength)
            return ST_SELECTION;
        if (length > 0) {
            src += start * chunk_strides[k];
            dst += ostart * out->strides[j];
        }
        p->len[j] = length;
        /* (a step past the dimension's length takes one element: its stride is never used,
         * and a step of 2**62 times a stride would overflow) */
        p->sstride[j] = length > 1 ? step * chunk_strides[k] : chunk_strides[k];
        p->dstride[j] = olength > 1 ? ostep * out->strides[j] : out->strides[j];
        j++;
    }
    if (j != n_out)
        return ST_SELECTION;
    p->nd = j;
    p->src_off = src;
    p->dst = (char *)out->buf + dst;
    /* the whole chunk, in order, into contiguous output memory: decoded there (in place) */
    p->in_place = 0;
    if (chunk_nd > 0 && src == 0) {
        Py_ssize_t itemsize = chunk_strides[chunk_nd - 1], expected = itemsize, total = 1;
        int in_order = 1;
        for (int k = j - 1; k >= 0 && in_order; k--) {
            in_order = p->sstride[k] == expected && p->dstride[k] == expected;
            expected *= p->len[k];
            total *= p->len[k];
        }
        p->in_place = in_order && total * itemsize == chunk_strides[0] * chunk_shape[0];
    }
    return 0;
}

/* the region from the decoded chunk (C order) into the output, innermost rows by memcpy
 * where both sides hold them contiguous */
static void
copy_region(const struct place *p, const char *chunk, Py_ssize_t itemsize)
{
    int nd = p->nd;
    for (int d = 0; d < nd; d++)
        if (p->len[d] == 0)
            return;
    if (nd == 0) {
        memcpy(p->dst, chunk + p->src_off, itemsize);
        return;
    }
    Py_ssize_t index[ZF_MAXDIM] = {0};
    int last = nd - 1;
    int rows = p->sstride[last] == itemsize && p->dstride[last] == itemsize;
    Py_ssize_t row_bytes = p->len[last] * itemsize;
    const char *s = chunk + p->src_off;
    char *d = p->dst;
    for (;;) {
        if (rows) {
            memcpy(d, s, row_bytes);
        }
        else {
            const char *si = s;
            char *di = d;
            for (Py_ssize_t i = 0; i < p->len[last]; i++) {
                memcpy(di, si, itemsize);
                si += p->sstride[last];
                di += p->dstride[last];
            }
        }
        int k = last - 1;
        for (; k >= 0; k--) {
            s += p->sstride[k];
            d += p->dstride[k];
            if (++index[k] < p->len[k])
                break;
            s -= p->sstride[k] * p->len[k];
            d -= p->dstride[k] * p->len[k];
            index[k] = 0;
        }
        if (k < 0)
            return;
    }
}

static inline uint32_t
le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* one chunk's stored bytes decoded into ``dest`` (``nbytes``, its decoded size); 0 or ST_* */
static int
decode(const struct codec *codec, const char *src, size_t n, char *dest, size_t nbytes)
{
    if (codec->kind == CODEC_BLOSC) {
        if (n < 16)
            return ST_HEADER;
        const unsigned char *h = (const unsigned char *)src;
        if (le32(h + 4) != nbytes || le32(h + 12) != n)
            return ST_HEADER;
        int done = ((blosc_decompress_ctx_fn)codec->decompress)(src, dest, nbytes, 1);
        return done >= 0 && (size_t)done == nbytes ? 0 : ST_DECODE;
    }
    if (codec->kind == CODEC_ZSTD) { /* exactly one frame, stating the chunk's size */
        unsigned long long stated = ((zstd_content_size_fn)codec->content_size)(src, n);
        if (stated != (unsigned long long)nbytes)
            return ST_HEADER;
        if (((zstd_frame_size_fn)codec->frame_size)(src, n) != n)
            return ST_HEADER;
        size_t done = ((zstd_decompress_fn)codec->decompress)(dest, nbytes, src, n);
        return done == nbytes ? 0 : ST_DECODE;
    }
    return ST_DECODE;
}

static int
open_file(int dirfd, const char *name)
{
    if (dirfd >= 0) {
        struct zf_open_how how = {ZF_OPEN_FLAGS, 0,
                                  ZF_RESOLVE_BENEATH | ZF_RESOLVE_NO_MAGICLINKS};
        return (int)syscall(ZF_SYS_OPENAT2, dirfd, name, &how, sizeof how);
    }
    return open(name, ZF_OPEN_FLAGS);
}

static ssize_t
pread_all(int fd, char *buf, size_t len, off_t at)
{
    ssize_t n;
    do {
        n = pread(fd, buf, len, at);
    } while (n < 0 && errno == EINTR);
    return n;
}

/* a whole file, read in one pread into ``buf`` (``cap``: one byte more than it may hold) */
static int
read_file(int dirfd, const char *name, char *buf, size_t cap, size_t *got)
{
    int fd = open_file(dirfd, name);
    if (fd < 0)
        return -errno;
    ssize_t n = pread_all(fd, buf, cap, 0);
    int saved = errno;
    close(fd);
    if (n < 0)
        return -saved;
    if ((size_t)n >= cap)
        return ST_NOT_WHOLE;
    *got = (size_t)n;
    return 0;
}

static int
parse_codec(PyObject *spec, struct codec *codec)
{
    unsigned long long a = 0, b = 0, c = 0;
    int kind;
    if (!PyArg_ParseTuple(spec, "iK|KK", &kind, &a, &b, &c))
        return -1;
    codec->kind = kind;
    codec->decompress = (void *)(uintptr_t)a;
    codec->content_size = (void *)(uintptr_t)b;
    codec->frame_size = (void *)(uintptr_t)c;
    if (!a || (kind == CODEC_ZSTD && (!b || !c)) || (kind != CODEC_BLOSC && kind != CODEC_ZSTD)) {
        PyErr_SetString(PyExc_ValueError, "chunkloop: an unknown codec or a null function");
        return -1;
    }
    return 0;
}

/* run(targets, sources, mode, codec, scratch, chunk_shape, itemsize[, dirfd, expect, owns])
 *
 * targets: one (request, out) a chunk; sources: one a chunk, a whole file's name (bytes,
 * MODE_FILES: ``expect``, the buffer, one byte more than it may hold), (coords, body, start,
 * stop) as the span (MODE_SPANS) or (name, start, stop) of a file (MODE_RANGES: ``expect``,
 * the longest range taken; the same name object for a file's chunks in a row; a span's body
 * bytes or any object with a contiguous buffer, such as a transport's, held while the batch
 * runs: the same object for a body's chunks in a row); codec: (kind, decompress[, zstd's
 * content-size and frame-size functions]) as addresses; scratch: a writable buffer of the
 * chunk's decoded size; owns: None, or one a chunk, None or the C-contiguous writable memory
 * (of the chunk's decoded size) a chunk to keep is decoded into, its region copied from
 * there. Returns a list: for each chunk its stored size (done), or an outcome below 0
 * (-errno: the file could not be read; the ST_* codes). */
static PyObject *
chunkloop_run(PyObject *self, PyObject *args)
{
    PyObject *targets, *sources, *codec_spec, *shape_obj, *owns = Py_None;
    int mode, dirfd = -1;
    Py_buffer scratch;
    Py_ssize_t itemsize, expect = 0;
    if (!PyArg_ParseTuple(args, "O!O!iO!w*O!n|inO", &PyList_Type, &targets, &PyList_Type,
                          &sources, &mode, &PyTuple_Type, &codec_spec, &scratch,
                          &PyTuple_Type, &shape_obj, &itemsize, &dirfd, &expect, &owns))
        return NULL;
    PyObject *result = NULL;
    struct place *places = NULL;
    char *filebuf = NULL;
    Py_buffer out = {0};
    PyObject *out_obj = NULL;
    Py_buffer *held = NULL;
    Py_ssize_t n_held = 0;
    PyObject *body_obj = NULL; /* the last body of another type than bytes, its buffer held */
    const char *body_at = NULL;
    Py_ssize_t body_len = 0;
    struct codec codec;
    Py_ssize_t n = PyList_GET_SIZE(targets);
    int chunk_nd = (int)PyTuple_GET_SIZE(shape_obj);
    Py_ssize_t chunk_shape[ZF_MAXDIM], chunk_strides[ZF_MAXDIM];
    size_t nbytes = (size_t)itemsize;

    if (parse_codec(codec_spec, &codec) < 0)
        goto done;
    if (PyList_GET_SIZE(sources) != n || chunk_nd > ZF_MAXDIM || itemsize <= 0 ||
        (owns != Py_None && (!PyList_Check(owns) || PyList_GET_SIZE(owns) != n)) ||
        mode < MODE_FILES || mode > MODE_RANGES || (mode != MODE_SPANS && expect <= 0)) {
        PyErr_SetString(PyExc_ValueError, "chunkloop: arguments that do not fit");
        goto done;
    }
    for (int k = 0; k < chunk_nd; k++) {
        chunk_shape[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape_obj, k));
        if (chunk_shape[k] < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "chunkloop: a negative chunk shape");
            goto done;
        }
    }
    for (int k = chunk_nd - 1; k >= 0; k--) {
        chunk_strides[k] = (Py_ssize_t)nbytes;
        if (chunk_shape[k] && nbytes > (size_t)PY_SSIZE_T_MAX / (size_t)chunk_shape[k]) {
            PyErr_SetString(PyExc_ValueError, "chunkloop: a chunk too large to address");
            goto done;
        }
        nbytes *= (size_t)chunk_shape[k];
    }
    if ((size_t)scratch.len < nbytes) {
        PyErr_SetString(PyExc_ValueError, "chunkloop: the scratch buffer is smaller than a chunk");
        goto done;
    }
    places = PyMem_Calloc(n ? n : 1, sizeof *places);
    held = PyMem_Calloc(n ? 3 * n : 1, sizeof *held); /* outputs', owns' and bodies' */
    if (!places || !held) {
        PyErr_NoMemory();
        goto done;
    }
    /* with the GIL: every chunk's region and source, from its Python objects */
    for (Py_ssize_t i = 0; i < n; i++) {
        struct place *p = &places[i];
        PyObject *target = PyList_GET_ITEM(targets, i);
        if (!PyTuple_Check(target) || PyTuple_GET_SIZE(target) != 2) {
            p->status = ST_SELECTION;
            continue;
        }
        PyObject *o = PyTuple_GET_ITEM(target, 1);
        if (o != out_obj) { /* (the outputs' buffers held until the batch is done) */
            if (PyObject_GetBuffer(o, &held[n_held], PyBUF_RECORDS) < 0) {
                PyErr_Clear();
                p->status = ST_SELECTION;
                continue;
            }
            out = held[n_held++];
            out_obj = o;
        }
        if (out.itemsize != itemsize || out.readonly) {
            p->status = ST_SELECTION;
            continue;
        }
        p->status = plan_place(p, target, chunk_shape, chunk_nd, chunk_strides, &out);
        if (p->status)
            continue;
        PyObject *own = owns == Py_None ? Py_None : PyList_GET_ITEM(owns, i);
        if (own != Py_None) { /* a chunk to keep: never decoded in place */
            Py_buffer *b = &held[n_held];
            if (PyObject_GetBuffer(own, b, PyBUF_CONTIG) < 0) {
                PyErr_Clear();
                p->status = ST_SELECTION;
                continue;
            }
            n_held++;
            if ((size_t)b->len < nbytes) {
                p->status = ST_SELECTION;
                continue;
            }
            p->own = b->buf;
            p->in_place = 0;
        }
        PyObject *source = PyList_GET_ITEM(sources, i);
        if (mode == MODE_FILES) {
            if (!PyBytes_Check(source)) {
                p->status = ST_SOURCE;
                continue;
            }
            p->name = PyBytes_AS_STRING(source);
            continue;
        }
        if (mode == MODE_RANGES) {
            Py_ssize_t start, stop;
            if (!PyTuple_Check(source) || PyTuple_GET_SIZE(source) != 3 ||
                !PyBytes_Check(PyTuple_GET_ITEM(source, 0))) {
                p->status = ST_SOURCE;
                continue;
            }
            start = PyLong_AsSsize_t(PyTuple_GET_ITEM(source, 1));
            stop = PyLong_AsSsize_t(PyTuple_GET_ITEM(source, 2));
            if (PyErr_Occurred()) {
                PyErr_Clear();
                p->status = ST_SOURCE;
                continue;
            }
            if (start < 0 || stop < start || stop - start > expect) {
                p->status = ST_SOURCE;
                continue;
            }
            p->name = PyBytes_AS_STRING(PyTuple_GET_ITEM(source, 0));
            p->start = start;
            p->src_len = stop - start;
            continue;
        }
        if (!PyTuple_Check(source) || PyTuple_GET_SIZE(source) != 4) {
            p->status = ST_SOURCE;
            continue;
        }
        PyObject *body = PyTuple_GET_ITEM(source, 1);
        Py_ssize_t start = PyLong_AsSsize_t(PyTuple_GET_ITEM(source, 2));
        Py_ssize_t stop = PyLong_AsSsize_t(PyTuple_GET_ITEM(source, 3));
        if (PyErr_Occurred()) {
            PyErr_Clear();
            p->status = ST_SOURCE;
            continue;
        }
        if (PyBytes_Check(body)) {
            body_at = PyBytes_AS_STRING(body);
            body_len = PyBytes_GET_SIZE(body);
            body_obj = NULL;
        } else if (body != body_obj) { /* (held until the batch is done) */
            body_obj = NULL;
            if (PyObject_GetBuffer(body, &held[n_held], PyBUF_SIMPLE) < 0) {
                PyErr_Clear(); /* (not a contiguous buffer: the Python way says so) */
                p->status = ST_SOURCE;
                continue;
            }
            body_at = (const char *)held[n_held].buf;
            body_len = held[n_held++].len;
            body_obj = body;
        }
        if (start < 0 || stop < start || stop > body_len) {
            p->status = ST_SOURCE;
            continue;
        }
        p->src = body_at + start;
        p->src_len = stop - start;
    }
    if (mode != MODE_SPANS) {
        filebuf = PyMem_RawMalloc((size_t)expect);
        if (!filebuf) {
            PyErr_NoMemory();
            goto done;
        }
    }
    /* without the GIL: read, decode, place. (The lists, their bytes and the outputs stay
     * alive: the caller holds them, and the outputs' buffers are held here.) */
    Py_BEGIN_ALLOW_THREADS
    int fd = -1;             /* ranges: the file of the last chunk, open */
    const char *fd_name = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        struct place *p = &places[i];
        if (p->status)
            continue;
        const char *src = p->src;
        size_t len = (size_t)p->src_len;
        if (mode == MODE_FILES) {
            int st = read_file(dirfd, p->name, filebuf, (size_t)expect, &len);
            if (st) {
                p->status = st;
                continue;
            }
            src = filebuf;
        }
        else if (mode == MODE_RANGES) { /* (a shard's chunks in a row share its descriptor) */
            if (p->name != fd_name) {
                if (fd >= 0)
                    close(fd);
                fd = open_file(dirfd, p->name);
                fd_name = fd >= 0 ? p->name : NULL;
                if (fd < 0) {
                    p->status = -errno;
                    continue;
                }
            }
            ssize_t got = pread_all(fd, filebuf, len, (off_t)p->start);
            if (got < 0 || (size_t)got != len) {
                p->status = got < 0 ? -errno : ST_SOURCE;
                continue;
            }
            src = filebuf;
        }
        char *into = p->own ? p->own : p->in_place ? p->dst : (char *)scratch.buf;
        int st = decode(&codec, src, len, into, nbytes);
        if (st) {
            p->status = st;
            continue;
        }
        if (!p->in_place)
            copy_region(p, into, itemsize);
        p->src_len = (Py_ssize_t)len;
    }
    if (fd >= 0)
        close(fd);
    Py_END_ALLOW_THREADS

    result = PyList_New(n);
    if (!result)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromSsize_t(places[i].status ? places[i].status : places[i].src_len);
        if (!v) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, v);
    }
done:
    for (Py_ssize_t i = 0; i < n_held; i++)
        PyBuffer_Release(&held[i]);
    PyMem_Free(held);
    PyMem_Free(places);
    PyMem_RawFree(filebuf);
    PyBuffer_Release(&scratch);
    return result;
}

static PyMethodDef methods[] = {
    {"run", chunkloop_run, METH_VARARGS,
     "Read, decode and place a batch of chunks with the GIL let go once (see the source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_chunkloop", "The Python pipeline's per-chunk loop, compiled.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__chunkloop(void)
{
    return PyModule_Create(&module);
}
