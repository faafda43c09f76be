/* _bpebench_ids: Python lists of token ids from an int32 id array, in one pass.

   The fused pipeline's kernel writes ids into an int32 array; the caller wants a
   list of Python ints. ``ndarray.tolist`` makes a new int object per id, and
   numpy's gather from an object array (``np.take`` then ``tolist``) walks the ids
   twice through per-element function pointers. Here each id takes a reference to
   the shared int object of its token, one pass, straight into the list's storage.

   id_list(objects, ids[, count]) -> list
       [objects[i] for i in ids[:count]] (all of ``ids`` without ``count``); ``objects`` a 1-d
       object array, ``ids`` a C-contiguous 1-d array of 4-byte ints. ``count`` spares a short
       text's caller the slice (a numpy view: 0.1 us, half of what the list then costs).
   id_lists(objects, ids, bounds) -> list of lists
       [id_list(objects, ids[bounds[k]:bounds[k+1]]) for k ...]; ``bounds`` a
       C-contiguous 1-d array of 8-byte ints, non-decreasing, within len(ids).

   move_items(target, source) -> None
       the items of the list ``source`` appended to the list ``target``; ``source`` is left empty.
   utf8_span(text, start, end) -> bytes or None
       text[start:end].encode("utf-8") with the GIL released; None at a surrogate.
   utf8_texts(texts, first, last) -> (bytes, bytes) or None
       the UTF-8 of the strs texts[first:last] joined, and their int64 start offsets (and the
       end), with the GIL released; None at a surrogate.
   find_pair(data, first, second) -> int
       the first index i with data[i] == first and data[i + 1] == second in the bytes
       ``data``, or -1.

   pin_objects(objects) -> bool
       make the objects of a 1-d object array permanent and let id_list / id_lists take
       them without a new reference (Python 3.11 and older; False elsewhere, and nothing
       changes). See ``pin_objects`` below.
   strided_ints(objects) -> bool
       fill a writable 1-d object array with the ints 0 .. len - 1, made at one stride so
       that a list of ids is filled without reading the array, and pin it (Python 3.11 and
       older; False elsewhere, the array untouched). See "Strided ints" below.

   Every id is checked against len(objects) (IndexError), buffers against their
   item size and dimensions (TypeError), so no argument reads outside an array.
   Built with the ahead-of-time module (``algorithms/pipeline/aot.py``), which loads it. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* a struct format character with an optional byte-order prefix: "i", "<i", "=i", ... */
static int format_is(const char *format, const char *accepted)
{
    if (format == NULL)
        return 0;
    if (format[0] == '@' || format[0] == '=' || format[0] == '<')
        format++;
    return format[0] != '\0' && format[1] == '\0' && strchr(accepted, format[0]) != NULL;
}

static int get_vector(PyObject *arg, Py_buffer *view, Py_ssize_t itemsize, const char *accepted, const char *what,
                      const char *items)
{
    if (PyObject_GetBuffer(arg, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->ndim != 1 || view->itemsize != itemsize || !format_is(view->format, accepted)) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous 1-d array of %s", what, items);
        return -1;
    }
    return 0;
}

/* Pinned arrays: object arrays whose items ``pin_objects`` made permanent. A list may hold such an
   item without taking a reference: the list's release still drops one, but the count starts at
   2^60, which no process's releases reach. Taking a reference is a write to the int object of
   every id, on a text the CPU has not seen a cache miss each; without it a list of ids is made
   1.2-1.7x as fast (docs/performance.md, "Pinned id objects"). Python 3.12 has such objects itself
   ("immortal", PEP 683) with another reference-count layout, so this is done for 3.11 and older
   only. Each pinned array is kept alive here, so an address in this table always means that array. */
#define MAX_PINNED 16
/* a list of at least this many ids from a pinned array is filled with the GIL released (a batch's
   lists too, when they hold this many together) */
#define RELEASE_GIL_IDS 4096
/* Strided ints (``strided_ints``): the objects of ids above SMALL_INT_MAX made here, in one block at
   INT_STRIDE bytes apart, so that id's object is at an address computed from the id; the ids up to
   SMALL_INT_MAX are the interpreter's own small ints, which sit at the same stride in 3.11. A list
   of ids is then filled without reading the table of pointers: on a text the CPU has not seen each
   read of that table (1.6 MB for o200k) missed the cache (0.6-0.8 against 1.6-4.1 ns an id, a
   C loop over the unseen documents' ids; docs/performance.md, "Strided id objects"). */
#define INT_STRIDE 32
#define SMALL_INT_MAX 256
typedef struct {
    PyObject *owner;
    PyObject *const *items;
    Py_ssize_t n_items;
    char *block;       /* id's object at block + id * INT_STRIDE above SMALL_INT_MAX, or NULL */
    char *small_ints;  /* the object of 0; id's at small_ints + id * INT_STRIDE up to SMALL_INT_MAX */
} Pinned;
static Pinned pinned[MAX_PINNED];
static int n_pinned_arrays = 0;

/* the pinned array that ``objects`` is (or starts), or NULL */
static const Pinned *all_pinned(PyObject *const *objects, Py_ssize_t n_objects)
{
    for (int k = 0; k < n_pinned_arrays; k++)
        if (objects == pinned[k].items && n_objects <= pinned[k].n_items)
            return &pinned[k];
    return NULL;
}

/* items[k - start] = objects[ids[k]] for start <= k < end, no reference taken (a pinned array); the
   position of the first id out of range, or -1. Needs no GIL: it writes only the list's storage. */
static Py_ssize_t fill_pinned(PyObject **items, const Pinned *table, PyObject *const *objects, Py_ssize_t n_objects,
                              const int32_t *ids, Py_ssize_t start, Py_ssize_t end)
{
    if (table->block != NULL) {
        uintptr_t block = (uintptr_t)table->block, small = (uintptr_t)table->small_ints;
        for (Py_ssize_t k = start; k < end; k++) {
            uint32_t id = (uint32_t)ids[k];
            if (id >= (uint64_t)n_objects)
                return k;
            /* the base without a branch: small ints are a fifth of the ids, in no predictable order */
            uintptr_t base = block ^ ((block ^ small) & ((uintptr_t)0 - (uintptr_t)(id <= SMALL_INT_MAX)));
            items[k - start] = (PyObject *)(base + (uintptr_t)id * INT_STRIDE);
        }
        return -1;
    }
    for (Py_ssize_t k = start; k < end; k++) {
        uint32_t id = (uint32_t)ids[k];
        if (id >= (uint64_t)n_objects)
            return k;
        items[k - start] = objects[id];
    }
    return -1;
}

static void id_out_of_range(const int32_t *ids, Py_ssize_t k, Py_ssize_t n_objects)
{
    PyErr_Format(PyExc_IndexError, "id %d at position %zd is not below %zd", ids[k], k, n_objects);
}

/* made[k] = a new list of objects[ids[at[k]:at[k + 1]]] for 0 <= k < n_lists, from a pinned array.
   Each list gets storage that is not written before its items are (its size stays 0 until they
   are: a valid empty list meanwhile); ``PyList_New``'s zeroed storage, then the items, took 20%
   more time an id. When the lists hold RELEASE_GIL_IDS ids together they are filled in one stretch
   with the GIL released: threads that each encoded a part of a text or of a batch then build their
   lists at the same time (a batch's documents are mostly shorter than that one by one, and with
   the GIL held their lists were 13-14% of a batch call's CPU time; 2% is left). One stretch per
   call: with a busy Python thread beside, every reacquisition of the GIL waits up to the
   interpreter's switch interval, and releasing it per block of lists made a call 47x slower.
   0, or -1 with an exception set (each list made then holds the items it was given; the caller
   releases them with ``made``). */
static int fill_pinned_lists(PyObject **made, const Pinned *table, PyObject *const *objects, Py_ssize_t n_objects,
                             const int32_t *ids, const int64_t *at, Py_ssize_t n_lists)
{
    for (Py_ssize_t k = 0; k < n_lists; k++) {
        PyObject *one = PyList_New(0);
        if (one == NULL)
            return -1;
        made[k] = one;
        Py_ssize_t n = (Py_ssize_t)(at[k + 1] - at[k]);
        if (n > 0) {
            PyObject **storage = PyMem_New(PyObject *, n);
            if (storage == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            ((PyListObject *)one)->ob_item = storage;
            ((PyListObject *)one)->allocated = n;
        }
    }
    int release = n_lists > 0 && at[n_lists] - at[0] >= RELEASE_GIL_IDS;
    Py_ssize_t bad = -1;
    PyThreadState *state = NULL;
    if (release) {
        /* only the caller refers to the lists; kept from the garbage collector while their sizes
           are written, so that no collection in another thread reads them meanwhile */
        for (Py_ssize_t k = 0; k < n_lists; k++)
            PyObject_GC_UnTrack(made[k]);
        state = PyEval_SaveThread();
    }
    for (Py_ssize_t k = 0; k < n_lists && bad < 0; k++) {
        PyListObject *one = (PyListObject *)made[k];
        bad = fill_pinned(one->ob_item, table, objects, n_objects, ids, (Py_ssize_t)at[k], (Py_ssize_t)at[k + 1]);
        Py_SET_SIZE(one, bad >= 0 ? bad - (Py_ssize_t)at[k] : (Py_ssize_t)(at[k + 1] - at[k]));
    }
    if (release) {
        PyEval_RestoreThread(state);
        for (Py_ssize_t k = 0; k < n_lists; k++)
            PyObject_GC_Track(made[k]);
    }
    if (bad >= 0) {
        id_out_of_range(ids, bad, n_objects);
        return -1;
    }
    return 0;
}

/* a new list of objects[ids[k]] for start <= k < end, or NULL with an exception set */
static PyObject *gather(PyObject *const *objects, Py_ssize_t n_objects, const int32_t *ids,
                        Py_ssize_t start, Py_ssize_t end)
{
    const Pinned *table = all_pinned(objects, n_objects);
    if (table != NULL) {
        PyObject *list = NULL;
        const int64_t at[2] = {start, end};
        if (fill_pinned_lists(&list, table, objects, n_objects, ids, at, 1) < 0) {
            Py_XDECREF(list);
            return NULL;
        }
        return list;
    }
    PyObject *list = PyList_New(end - start);
    if (list == NULL)
        return NULL;
    PyObject **items = ((PyListObject *)list)->ob_item;
    /* The shared objects and their pointers span megabytes: on a text the CPU has not seen, nearly
       every reference would miss the cache, one miss after another. Two passes of prefetches first
       (pointers, then the objects they point at; a prefetch never faults, and every read of a pointer
       is bounds-checked) let those misses overlap. */
    for (Py_ssize_t k = start; k < end; k++) {
        uint32_t id = (uint32_t)ids[k];
        if (id < (uint64_t)n_objects)
            __builtin_prefetch(&objects[id]);
    }
    for (Py_ssize_t k = start; k < end; k++) {
        uint32_t id = (uint32_t)ids[k];
        if (id < (uint64_t)n_objects && objects[id] != NULL)
            __builtin_prefetch(objects[id], 1);
    }
    for (Py_ssize_t k = start; k < end; k++) {
        uint32_t id = (uint32_t)ids[k];
        if (id >= (uint64_t)n_objects || objects[id] == NULL) {
            /* the items written so far are released with the list; the rest are NULL */
            Py_DECREF(list);
            id_out_of_range(ids, k, n_objects);
            return NULL;
        }
        PyObject *object = objects[id];
        Py_INCREF(object);
        items[k - start] = object;
    }
    return list;
}

static PyObject *id_list(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "id_list(objects, ids[, count]) takes 2 or 3 arguments");
        return NULL;
    }
    Py_ssize_t count = -1;
    if (nargs == 3) {
        count = PyLong_AsSsize_t(args[2]);
        if (count == -1 && PyErr_Occurred())
            return NULL;
        if (count < 0) {
            PyErr_SetString(PyExc_ValueError, "count must not be negative");
            return NULL;
        }
    }
    Py_buffer objects, ids;
    if (get_vector(args[0], &objects, sizeof(PyObject *), "O", "objects", "objects") < 0)
        return NULL;
    if (get_vector(args[1], &ids, 4, "il", "ids", "int32") < 0) {
        PyBuffer_Release(&objects);
        return NULL;
    }
    if (count > ids.shape[0]) {
        PyErr_Format(PyExc_ValueError, "count %zd is more than the %zd ids", count, ids.shape[0]);
        PyBuffer_Release(&ids);
        PyBuffer_Release(&objects);
        return NULL;
    }
    PyObject *list = gather((PyObject *const *)objects.buf, objects.shape[0], (const int32_t *)ids.buf, 0,
                            count < 0 ? ids.shape[0] : count);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&objects);
    return list;
}

static PyObject *id_lists(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "id_lists(objects, ids, bounds) takes 3 arguments");
        return NULL;
    }
    Py_buffer objects, ids, bounds;
    PyObject *lists = NULL;
    if (get_vector(args[0], &objects, sizeof(PyObject *), "O", "objects", "objects") < 0)
        return NULL;
    if (get_vector(args[1], &ids, 4, "il", "ids", "int32") < 0)
        goto release_objects;
    if (get_vector(args[2], &bounds, 8, "lq", "bounds", "int64") < 0)
        goto release_ids;
    const int64_t *at = (const int64_t *)bounds.buf;
    Py_ssize_t n_lists = bounds.shape[0] > 0 ? bounds.shape[0] - 1 : 0;
    for (Py_ssize_t k = 0; k < n_lists; k++) {
        if (at[k] < 0 || at[k] > at[k + 1] || at[k + 1] > ids.shape[0]) {
            PyErr_Format(PyExc_ValueError, "bounds[%zd:%zd] = %lld, %lld is not a range of the %zd ids", k, k + 2,
                         (long long)at[k], (long long)at[k + 1], ids.shape[0]);
            goto release_bounds;
        }
    }
    lists = PyList_New(n_lists);
    if (lists == NULL)
        goto release_bounds;
    const Pinned *table = all_pinned((PyObject *const *)objects.buf, objects.shape[0]);
    if (table != NULL) {
        /* the lists made go straight into ``lists``, which releases them on an error */
        if (fill_pinned_lists(((PyListObject *)lists)->ob_item, table, (PyObject *const *)objects.buf,
                              objects.shape[0], (const int32_t *)ids.buf, at, n_lists) < 0)
            Py_CLEAR(lists);
        goto release_bounds;
    }
    for (Py_ssize_t k = 0; k < n_lists; k++) {
        PyObject *one = gather((PyObject *const *)objects.buf, objects.shape[0], (const int32_t *)ids.buf,
                               (Py_ssize_t)at[k], (Py_ssize_t)at[k + 1]);
        if (one == NULL) {
            Py_CLEAR(lists);
            break;
        }
        PyList_SET_ITEM(lists, k, one);
    }
release_bounds:
    PyBuffer_Release(&bounds);
release_ids:
    PyBuffer_Release(&ids);
release_objects:
    PyBuffer_Release(&objects);
    return lists;
}

/* pin_objects(objects) -> bool: see "Pinned arrays" above. The array must hold no NULL and must
   not be written to afterwards (the fused pipeline's table of id objects, made once per process). */
static PyObject *pin_objects(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "pin_objects(objects) takes 1 argument");
        return NULL;
    }
#if PY_VERSION_HEX >= 0x030C0000 || defined(Py_GIL_DISABLED)
    Py_RETURN_FALSE;
#else
    if (n_pinned_arrays == MAX_PINNED)
        Py_RETURN_FALSE;
    Py_buffer objects;
    if (get_vector(args[0], &objects, sizeof(PyObject *), "O", "objects", "objects") < 0)
        return NULL;
    PyObject *const *items = (PyObject *const *)objects.buf;
    for (Py_ssize_t k = 0; k < objects.shape[0]; k++) {
        if (items[k] == NULL) {
            PyBuffer_Release(&objects);
            PyErr_Format(PyExc_ValueError, "objects[%zd] is not set", k);
            return NULL;
        }
    }
    for (Py_ssize_t k = 0; k < objects.shape[0]; k++)
        Py_SET_REFCNT(items[k], (Py_ssize_t)1 << 60);
    Py_INCREF(args[0]);
    pinned[n_pinned_arrays] = (Pinned){args[0], items, objects.shape[0], NULL, NULL};
    n_pinned_arrays++;
    PyBuffer_Release(&objects);
    Py_RETURN_TRUE;
#endif
}

/* strided_ints(objects) -> bool: fill a writable 1-d object array with the ints 0 .. len - 1, those
   above SMALL_INT_MAX made in one block (see "Strided ints"), and pin it as ``pin_objects`` does.
   False, with the array untouched, where that cannot be done (Python 3.12 and newer, small ints not
   at the stride, no free slot in the pinned table). The block is never freed: lists may hold its
   objects for as long as the process lives. */
static PyObject *strided_ints(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "strided_ints(objects) takes 1 argument");
        return NULL;
    }
#if PY_VERSION_HEX >= 0x030C0000 || defined(Py_GIL_DISABLED)
    Py_RETURN_FALSE;
#else
    Py_buffer objects;
    if (get_vector(args[0], &objects, sizeof(PyObject *), "O", "objects", "objects") < 0)
        return NULL;
    Py_ssize_t n = objects.shape[0];
    if (objects.readonly || n > ((Py_ssize_t)1 << PYLONG_BITS_IN_DIGIT)) {
        PyBuffer_Release(&objects);
        PyErr_SetString(PyExc_ValueError, "strided_ints needs a writable array of at most 2**30 objects");
        return NULL;
    }
    PyObject *zero = PyLong_FromLong(0), *last_small = PyLong_FromLong(SMALL_INT_MAX);
    int small_at_stride = zero != NULL && last_small != NULL && sizeof(PyLongObject) <= INT_STRIDE &&
                          (char *)last_small - (char *)zero == (Py_ssize_t)SMALL_INT_MAX * INT_STRIDE;
    Py_XDECREF(zero);  /* the small ints live as long as the interpreter: the address stays valid */
    Py_XDECREF(last_small);
    if (PyErr_Occurred()) {
        PyBuffer_Release(&objects);
        return NULL;
    }
    char *block = NULL;
    if (small_at_stride && n_pinned_arrays < MAX_PINNED && n > SMALL_INT_MAX + 1) {
        block = PyMem_RawCalloc((size_t)n, INT_STRIDE);
        if (block == NULL) {
            PyBuffer_Release(&objects);
            return PyErr_NoMemory();
        }
    }
    if (block == NULL) {
        PyBuffer_Release(&objects);
        Py_RETURN_FALSE;
    }
    for (Py_ssize_t id = SMALL_INT_MAX + 1; id < n; id++) {
        PyLongObject *object = (PyLongObject *)(block + id * INT_STRIDE);
        Py_SET_REFCNT(object, (Py_ssize_t)1 << 60);  /* never released: see "Pinned arrays" */
        Py_SET_TYPE(object, &PyLong_Type);          /* a static type: no reference to take */
        Py_SET_SIZE(object, 1);                     /* one digit, positive */
        object->ob_digit[0] = (digit)id;
    }
    PyObject **items = (PyObject **)objects.buf;
    for (Py_ssize_t id = 0; id < n; id++) {
        PyObject *object = id <= SMALL_INT_MAX ? (PyObject *)((char *)zero + id * INT_STRIDE)
                                               : (PyObject *)(block + id * INT_STRIDE);
        if (id <= SMALL_INT_MAX)
            Py_SET_REFCNT(object, (Py_ssize_t)1 << 60);
        PyObject *old = items[id];
        items[id] = object;  /* the array's reference: a pinned object's count is not kept */
        Py_XDECREF(old);
    }
    Py_INCREF(args[0]);
    pinned[n_pinned_arrays] = (Pinned){args[0], items, n, block, (char *)zero};
    n_pinned_arrays++;
    PyBuffer_Release(&objects);
    Py_RETURN_TRUE;
#endif
}

/* UTF-8 of the code units src[0:n] of one PEP 393 kind into dst (room for 4 bytes per unit);
   the number of bytes written, or -1 at a surrogate (which UTF-8 cannot hold). No Python call. */
#define SPAN_TO_UTF8(T)                                                     \
    static Py_ssize_t span_to_utf8_##T(const T *src, Py_ssize_t n, unsigned char *dst) \
    {                                                                       \
        unsigned char *at = dst;                                            \
        Py_ssize_t k = 0;                                                   \
        while (k < n) {                                                     \
            /* eight ASCII characters at a time (most of a European text) */ \
            if (k + 8 <= n && (uint32_t)(src[k] | src[k + 1] | src[k + 2] | src[k + 3] | src[k + 4] | \
                                         src[k + 5] | src[k + 6] | src[k + 7]) < 0x80) { \
                for (int j = 0; j < 8; j++)                                 \
                    at[j] = (unsigned char)src[k + j];                      \
                at += 8;                                                    \
                k += 8;                                                     \
                continue;                                                   \
            }                                                               \
            uint32_t c = src[k++];                                          \
            if (c < 0x80) {                                                 \
                *at++ = (unsigned char)c;                                   \
            } else if (c < 0x800) {                                         \
                *at++ = (unsigned char)(0xC0 | (c >> 6));                   \
                *at++ = (unsigned char)(0x80 | (c & 0x3F));                 \
            } else if (c < 0x10000) {                                       \
                if (c >= 0xD800 && c <= 0xDFFF)                             \
                    return -1;                                              \
                *at++ = (unsigned char)(0xE0 | (c >> 12));                  \
                *at++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));          \
                *at++ = (unsigned char)(0x80 | (c & 0x3F));                 \
            } else {                                                        \
                *at++ = (unsigned char)(0xF0 | (c >> 18));                  \
                *at++ = (unsigned char)(0x80 | ((c >> 12) & 0x3F));         \
                *at++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));          \
                *at++ = (unsigned char)(0x80 | (c & 0x3F));                 \
            }                                                               \
        }                                                                   \
        return at - dst;                                                    \
    }
SPAN_TO_UTF8(Py_UCS1)
SPAN_TO_UTF8(Py_UCS2)
SPAN_TO_UTF8(Py_UCS4)

/* ``args[1]`` and ``args[2]`` as sizes (a span's ends); -1, an exception set, when one is not an int */
static int two_sizes(PyObject *const *args, Py_ssize_t *a, Py_ssize_t *b)
{
    *a = PyLong_AsSsize_t(args[1]);
    if (*a == -1 && PyErr_Occurred())
        return -1;
    *b = PyLong_AsSsize_t(args[2]);
    return *b == -1 && PyErr_Occurred() ? -1 : 0;
}

/* utf8_span(text, start, end) -> bytes or None: text[start:end].encode("utf-8") without the slice,
   converted with the GIL released (a str never changes, and the argument keeps it alive), so that
   threads that each take a part of one long text convert their parts at the same time. None when
   the span holds a surrogate (the caller's own path replaces it). */
static PyObject *utf8_span(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "utf8_span(text: str, start: int, end: int) takes 3 arguments");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t start, end;
    if (two_sizes(args, &start, &end) < 0 || PyUnicode_READY(text) < 0)
        return NULL;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (start < 0 || end < start || end > length) {
        PyErr_Format(PyExc_ValueError, "span %zd:%zd is not within the text's %zd characters", start, end, length);
        return NULL;
    }
    Py_ssize_t n = end - start;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (PyUnicode_IS_ASCII(text))
        return PyBytes_FromStringAndSize((const char *)data + start, n);
    Py_ssize_t most = n * (kind == PyUnicode_1BYTE_KIND ? 2 : kind == PyUnicode_2BYTE_KIND ? 3 : 4);
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, most);
    if (bytes == NULL)
        return NULL;
    unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(bytes);
    Py_ssize_t written;
    Py_BEGIN_ALLOW_THREADS
    if (kind == PyUnicode_1BYTE_KIND)
        written = span_to_utf8_Py_UCS1((const Py_UCS1 *)data + start, n, dst);
    else if (kind == PyUnicode_2BYTE_KIND)
        written = span_to_utf8_Py_UCS2((const Py_UCS2 *)data + start, n, dst);
    else
        written = span_to_utf8_Py_UCS4((const Py_UCS4 *)data + start, n, dst);
    Py_END_ALLOW_THREADS
    if (written < 0) {
        Py_DECREF(bytes);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&bytes, written) < 0)
        return NULL;
    return bytes;
}

/* utf8_texts(texts, first, last) -> (bytes, bytes) or None: the UTF-8 of texts[first:last] (a list of
   str) in one bytes object, and where each text starts in it and the last ends (last - first + 1
   native int64 offsets, as bytes), converted with the GIL released: a batch's groups are made UTF-8
   on their threads at the same time, where ``[t.encode() for t in group]`` and the join after it
   held the GIL (0.3 ms a group of 80-256 kB, each thread waiting for the other's at the start and
   between kernels). The strs are read while the GIL is released: they never change, and the list,
   the caller's own, keeps them alive. None when a text holds a surrogate (the caller's own path
   replaces it). */
struct text_span {
    const void *data;
    Py_ssize_t length;
    int kind, ascii;
};

static PyObject *utf8_texts(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "utf8_texts(texts: list, first: int, last: int) takes 3 arguments");
        return NULL;
    }
    PyObject *texts = args[0];
    Py_ssize_t first, last;
    if (two_sizes(args, &first, &last) < 0)
        return NULL;
    if (first < 0 || last < first || last > PyList_GET_SIZE(texts)) {
        PyErr_Format(PyExc_ValueError, "texts %zd:%zd are not within the list's %zd", first, last,
                     PyList_GET_SIZE(texts));
        return NULL;
    }
    Py_ssize_t m = last - first, most = 0;
    struct text_span *spans = PyMem_Malloc((size_t)(m > 0 ? m : 1) * sizeof(struct text_span));
    if (spans == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *text = PyList_GET_ITEM(texts, first + k);
        if (!PyUnicode_Check(text) || PyUnicode_READY(text) < 0) {
            PyMem_Free(spans);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "utf8_texts: item %zd is not a str", first + k);
            return NULL;
        }
        struct text_span *span = &spans[k];
        span->data = PyUnicode_DATA(text);
        span->length = PyUnicode_GET_LENGTH(text);
        span->kind = PyUnicode_KIND(text);
        span->ascii = PyUnicode_IS_ASCII(text);
        Py_ssize_t width = span->ascii ? 1 : span->kind == PyUnicode_1BYTE_KIND ? 2 : span->kind == PyUnicode_2BYTE_KIND ? 3 : 4;
        if (span->length > (PY_SSIZE_T_MAX - most) / width) {
            PyMem_Free(spans);
            return PyErr_NoMemory();
        }
        most += span->length * width;
    }
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, most);
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (m + 1) * (Py_ssize_t)sizeof(int64_t));
    if (bytes == NULL || offsets == NULL) {
        Py_XDECREF(bytes);
        Py_XDECREF(offsets);
        PyMem_Free(spans);
        return NULL;
    }
    unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(bytes);
    int64_t *starts = (int64_t *)PyBytes_AS_STRING(offsets); /* a bytes object's storage is aligned to 8 */
    Py_ssize_t at = 0;
    int surrogate = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < m && !surrogate; k++) {
        const struct text_span *span = &spans[k];
        Py_ssize_t written;
        starts[k] = at;
        if (span->ascii) {
            memcpy(dst + at, span->data, (size_t)span->length);
            written = span->length;
        } else if (span->kind == PyUnicode_1BYTE_KIND)
            written = span_to_utf8_Py_UCS1((const Py_UCS1 *)span->data, span->length, dst + at);
        else if (span->kind == PyUnicode_2BYTE_KIND)
            written = span_to_utf8_Py_UCS2((const Py_UCS2 *)span->data, span->length, dst + at);
        else
            written = span_to_utf8_Py_UCS4((const Py_UCS4 *)span->data, span->length, dst + at);
        if (written < 0)
            surrogate = 1;
        else
            at += written;
    }
    starts[m] = at;
    Py_END_ALLOW_THREADS
    PyMem_Free(spans);
    if (surrogate) {
        Py_DECREF(bytes);
        Py_DECREF(offsets);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&bytes, at) < 0) {
        Py_DECREF(offsets);
        return NULL;
    }
    PyObject *result = PyTuple_Pack(2, bytes, offsets);
    Py_DECREF(bytes);
    Py_DECREF(offsets);
    return result;
}

/* move_items(target, source) -> None: the items of the list ``source`` appended to the list
   ``target``, and ``source`` left empty: the item pointers move over, so no item's reference count is
   touched. ``a += b`` increments each item's count, a write to every int object, and the objects of
   the ids a thread has just listed sit in that thread's core's cache (0.6 ms for 170k ids against
   about 0.1 ms here). ``target`` grows by half again when it must grow, so a long text's parts,
   appended one by one as they come in, reallocate it a few times (a large block grows by remapping
   its pages, not by copying them). The copy runs with the GIL released: both lists are the
   caller's own, seen by no other thread (the pipeline's parts before they are returned). */
static PyObject *move_items(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "move_items(target, source) takes two lists");
        return NULL;
    }
    PyListObject *target = (PyListObject *)args[0], *source = (PyListObject *)args[1];
    Py_ssize_t have = Py_SIZE(target), n = Py_SIZE(source);
    if (target == source || n == 0)
        Py_RETURN_NONE; /* a list moved onto itself keeps its items where they are */
    if (n > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PyObject *) / 2 - have)
        return PyErr_NoMemory();
    Py_ssize_t need = have + n;
    if (need > target->allocated) {
        Py_ssize_t room = need + (need >> 1);
        PyObject **items = PyMem_Realloc(target->ob_item, (size_t)room * sizeof(PyObject *));
        if (items == NULL)
            return PyErr_NoMemory();
        target->ob_item = items;
        target->allocated = room;
    }
    PyObject **to = target->ob_item + have, **from = source->ob_item;
    if (n >= (1 << 14)) {
        Py_BEGIN_ALLOW_THREADS
        memcpy(to, from, (size_t)n * sizeof(PyObject *));
        Py_END_ALLOW_THREADS
    } else {
        memcpy(to, from, (size_t)n * sizeof(PyObject *));
    }
    Py_SET_SIZE(source, 0); /* its references now belong to ``target``; its storage stays allocated */
    Py_SET_SIZE(target, need);
    Py_RETURN_NONE;
}

/* find_pair(data, first, second) -> the first index of the two bytes ``first second`` in the bytes
   ``data``, or -1. ``memchr`` finds each ``first`` (vector code in the C library), so a text where
   that byte is common (``<`` in C code, tiktoken's special tokens' first byte) costs a call per
   occurrence, not a regex search: 8 kB of C code in a few hundred nanoseconds. */
static PyObject *find_pair(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "find_pair(data: bytes, first: int, second: int) takes 3 arguments");
        return NULL;
    }
    long first = PyLong_AsLong(args[1]);
    if (first == -1 && PyErr_Occurred())
        return NULL;
    long second = PyLong_AsLong(args[2]);
    if (second == -1 && PyErr_Occurred())
        return NULL;
    if (first < 0 || first > 255 || second < 0 || second > 255) {
        PyErr_Format(PyExc_ValueError, "find_pair: bytes are 0 to 255, not %ld and %ld", first, second);
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    const unsigned char *at = base, *last = base + PyBytes_GET_SIZE(args[0]) - 1; /* a pair starts before it */
    while (at < last) {
        const unsigned char *found = memchr(at, (int)first, (size_t)(last - at));
        if (found == NULL)
            break;
        if (found[1] == (unsigned char)second)
            return PyLong_FromSsize_t(found - base);
        at = found + 1;
    }
    return PyLong_FromLong(-1);
}

static PyMethodDef methods[] = {
    {"find_pair", (PyCFunction)(void (*)(void))find_pair, METH_FASTCALL,
     "find_pair(data, first, second) -> the first index of the bytes first, second in data, or -1"},
    {"move_items", (PyCFunction)(void (*)(void))move_items, METH_FASTCALL,
     "move_items(target, source) -> None: source's items appended to target, source left empty"},
    {"utf8_texts", (PyCFunction)(void (*)(void))utf8_texts, METH_FASTCALL,
     "utf8_texts(texts, first, last) -> (UTF-8 of texts[first:last] joined, int64 offsets as bytes), or None"},
    {"utf8_span", (PyCFunction)(void (*)(void))utf8_span, METH_FASTCALL,
     "utf8_span(text, start, end) -> text[start:end] as UTF-8 bytes (GIL released), or None at a surrogate"},
    {"id_list", (PyCFunction)(void (*)(void))id_list, METH_FASTCALL,
     "id_list(objects, ids[, count]) -> [objects[i] for i in ids[:count]]"},
    {"pin_objects", (PyCFunction)(void (*)(void))pin_objects, METH_FASTCALL,
     "pin_objects(objects) -> True when id_list may take the array's objects without new references"},
    {"strided_ints", (PyCFunction)(void (*)(void))strided_ints, METH_FASTCALL,
     "strided_ints(objects) -> True when the object array now holds 0 .. len - 1, pinned, at one stride"},
    {"id_lists", (PyCFunction)(void (*)(void))id_lists, METH_FASTCALL,
     "id_lists(objects, ids, bounds) -> one list per range bounds[k]:bounds[k+1] of ids"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_bpebench_ids", "Python lists of token ids from int32 arrays.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bpebench_ids(void)
{
    return PyModule_Create(&module_def);
}
