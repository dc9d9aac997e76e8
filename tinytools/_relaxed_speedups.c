/*
 * The relaxed-JSON scanner of tinytools/_relaxed.py, compiled.
 *
 * rewrite(text: str) -> tuple[str, int] | None
 *
 * `text` is an unwrapped document (it starts with "{" and ends with "}"), read as
 * UTF-8 (ASCII text in place, other text encoded first: a lone surrogate raises
 * UnicodeEncodeError, as str.encode does). The result is the strict JSON text and the
 * bits of what changed (the values of _relaxed.py), or None when the document is
 * refused: _relaxed.rewrite's signature and answers. The state machine is
 * the one _relaxed.py documents, token for token; tests/test_relaxed.py checks that both
 * give the same answer on any text, and tests/test_repair.py runs every repair test with
 * each. The output is the input with edits at a few points:
 * unchanged runs are copied with memcpy when an edit is reached.
 *
 * One pass, no recursion: a whitespace run or comment is read at most twice (once by a peek),
 * every other byte once, and the only memory beyond the output is one flag per open
 * brace.
 *
 * keys_may_repeat(text: str | bytes) -> bool
 *
 * The cheap bound of tinytools/_declare/decode.py's duplicate-key refusal, compiled (see it
 * below).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

enum {
    KEYS = 1,
    BRACES = 2,
    TEMPLATE_TOKENS = 4,
    COMMAS = 8,
    SINGLE_QUOTES = 16,
    LITERALS = 32,
    CONTROL = 64,
    COMMENTS = 128,
};

/* A growable byte buffer. */
typedef struct {
    char *data;
    Py_ssize_t length;
    Py_ssize_t capacity;
} Buffer;

static int
buffer_reserve(Buffer *buffer, Py_ssize_t extra)
{
    if (extra > PY_SSIZE_T_MAX - buffer->length) {
        PyErr_NoMemory();
        return -1;
    }
    if (buffer->length + extra <= buffer->capacity) {
        return 0;
    }
    Py_ssize_t capacity = buffer->capacity ? buffer->capacity : 64;
    while (capacity < buffer->length + extra) {
        if (capacity > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        capacity *= 2;
    }
    char *data = PyMem_Realloc(buffer->data, (size_t)capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    buffer->data = data;
    buffer->capacity = capacity;
    return 0;
}

static int
buffer_write(Buffer *buffer, const char *bytes, Py_ssize_t size)
{
    if (buffer_reserve(buffer, size) < 0) {
        return -1;
    }
    memcpy(buffer->data + buffer->length, bytes, (size_t)size);
    buffer->length += size;
    return 0;
}

static int
buffer_put(Buffer *buffer, char byte)
{
    return buffer_write(buffer, &byte, 1);
}

/* The scan: the input, the output, and how much of the input is already copied. */
typedef struct {
    const unsigned char *text;
    Py_ssize_t size;
    Buffer out;
    Py_ssize_t copied; /* text[copied:] is not yet in out */
} Scan;

/* Copy the unchanged input up to `end`, then skip to `resume`. */
static int
copy_until(Scan *scan, Py_ssize_t end, Py_ssize_t resume)
{
    if (buffer_write(&scan->out, (const char *)scan->text + scan->copied,
                     end - scan->copied) < 0) {
        return -1;
    }
    scan->copied = resume;
    return 0;
}

static inline int
is_space(unsigned char byte)
{
    return byte == ' ' || byte == '\t' || byte == '\r' || byte == '\n';
}

/*
 * Where the comment at `at` ends: past a block comment's closing star-slash, or at
 * the newline (or the end) after a line comment. 0 when no comment starts at `at`,
 * -1 for a block comment that is never closed.
 */
static Py_ssize_t
comment_end(const Scan *scan, Py_ssize_t at)
{
    const unsigned char *text = scan->text;
    if (at + 1 >= scan->size || text[at] != '/') {
        return 0;
    }
    if (text[at + 1] == '/') {
        const void *newline = memchr(text + at + 2, '\n', (size_t)(scan->size - at - 2));
        return newline == NULL ? scan->size : (const unsigned char *)newline - text;
    }
    if (text[at + 1] != '*') {
        return 0;
    }
    for (Py_ssize_t i = at + 2; i + 1 < scan->size; i++) {
        if (text[i] == '*' && text[i + 1] == '/') {
            return i + 2;
        }
    }
    return -1;
}

/* The first byte at or after `at` that is neither JSON whitespace nor in a comment, or 0
   at the end. An unclosed block comment is not skipped: its "/" is the answer. */
static unsigned char
next_byte(const Scan *scan, Py_ssize_t at)
{
    while (at < scan->size) {
        if (is_space(scan->text[at])) {
            at++;
            continue;
        }
        Py_ssize_t after = comment_end(scan, at);
        if (after <= 0) {
            break;
        }
        at = after;
    }
    return at < scan->size ? scan->text[at] : 0;
}

/* How JSON writes the control character `byte` (below 0x20); returns its length. */
static Py_ssize_t
control_escape(unsigned char byte, char *escape)
{
    static const char hex[] = "0123456789abcdef";
    const char *named = NULL;
    switch (byte) {
    case '\b':
        named = "\\b";
        break;
    case '\t':
        named = "\\t";
        break;
    case '\n':
        named = "\\n";
        break;
    case '\f':
        named = "\\f";
        break;
    case '\r':
        named = "\\r";
        break;
    default:
        break;
    }
    if (named != NULL) {
        memcpy(escape, named, 2);
        return 2;
    }
    memcpy(escape, "\\u00", 4);
    escape[4] = hex[byte >> 4];
    escape[5] = hex[byte & 0xF];
    return 6;
}

/*
 * The UTF-8 character at `at`: its code point and byte length. The input comes from
 * str.encode(), so it is well formed; a truncated sequence, or a lead byte without its
 * continuation bytes, reads as one byte U+FFFD (never a word character).
 */
static Py_ssize_t
decode_character(const Scan *scan, Py_ssize_t at, Py_UCS4 *code_point)
{
    const unsigned char *text = scan->text + at;
    Py_ssize_t left = scan->size - at;
    unsigned char lead = text[0];
    Py_ssize_t length;
    Py_UCS4 value;
    if (lead < 0x80) {
        *code_point = lead;
        return 1;
    }
    if (lead >= 0xF0) {
        length = 4;
        value = lead & 0x07;
    }
    else if (lead >= 0xE0) {
        length = 3;
        value = lead & 0x0F;
    }
    else if (lead >= 0xC0) {
        length = 2;
        value = lead & 0x1F;
    }
    else {
        length = 0;
        value = 0;
    }
    if (length == 0 || length > left) {
        *code_point = 0xFFFD;
        return 1;
    }
    for (Py_ssize_t i = 1; i < length; i++) {
        if ((text[i] & 0xC0) != 0x80) {
            *code_point = 0xFFFD;
            return 1;
        }
        value = (value << 6) | (text[i] & 0x3F);
    }
    *code_point = value;
    return length;
}

/* Whether a code point is a word character: Python's \w, "$" or "-". */
static inline int
is_word(Py_UCS4 code_point)
{
    if (code_point < 0x80) {
        return (code_point >= 'a' && code_point <= 'z') ||
               (code_point >= 'A' && code_point <= 'Z') ||
               (code_point >= '0' && code_point <= '9') || code_point == '_' ||
               code_point == '$' || code_point == '-';
    }
    return Py_UNICODE_ISALNUM(code_point);
}

/* The end of the word starting at `at` (at == the result when there is none). */
static Py_ssize_t
word_end(const Scan *scan, Py_ssize_t at)
{
    while (at < scan->size) {
        Py_UCS4 code_point;
        Py_ssize_t length = decode_character(scan, at, &code_point);
        if (!is_word(code_point)) {
            break;
        }
        at += length;
    }
    return at;
}

/*
 * The end of the double-quoted string opened at `at`, or -1 if it is never closed;
 * `*extra` is how many bytes escaping its raw control characters adds (0 for none).
 */
static Py_ssize_t
double_quoted_end(const Scan *scan, Py_ssize_t at, Py_ssize_t *extra)
{
    const unsigned char *text = scan->text;
    *extra = 0;
    for (Py_ssize_t i = at + 1; i < scan->size; i++) {
        if (text[i] == '\\') {
            i++;
        }
        else if (text[i] == '"') {
            return i + 1;
        }
        else if (text[i] < 0x20) {
            char escape[6];
            *extra += control_escape(text[i], escape) - 1;
        }
    }
    return -1;
}

/* Copy the double-quoted string text[at:end] with its raw control characters escaped
   (`extra` more bytes); escape sequences are kept as they are. */
static int
double_quoted_escaped(Scan *scan, Py_ssize_t at, Py_ssize_t end, Py_ssize_t extra)
{
    const unsigned char *text = scan->text;
    if (copy_until(scan, at, end) < 0 || buffer_reserve(&scan->out, end - at + extra) < 0) {
        return -1;
    }
    Buffer *out = &scan->out;
    for (Py_ssize_t i = at; i < end; i++) {
        if (text[i] == '\\') {
            out->data[out->length++] = '\\';
            out->data[out->length++] = (char)text[++i];
        }
        else if (text[i] < 0x20) {
            out->length += control_escape(text[i], out->data + out->length);
        }
        else {
            out->data[out->length++] = (char)text[i];
        }
    }
    return 0;
}

/*
 * Rewrite the single-quoted string opened at `at`. Returns where it ends, 0 if it is never
 * closed, or -1 on a memory error; `*control` is set when it held a raw control character.
 */
static Py_ssize_t
single_quoted(Scan *scan, Py_ssize_t at, int *control)
{
    const unsigned char *text = scan->text;
    Py_ssize_t end = -1;
    Py_ssize_t size = 2; /* the output: the quotes, then each body byte */
    *control = 0;
    for (Py_ssize_t i = at + 1; i < scan->size; i++) {
        if (text[i] == '\\') {
            i++;
            size += 2;
        }
        else if (text[i] == '\'') {
            end = i;
            break;
        }
        else if (text[i] < 0x20) {
            char escape[6];
            size += control_escape(text[i], escape);
            *control = 1;
        }
        else {
            size += text[i] == '"' ? 2 : 1; /* a bare " is escaped */
        }
    }
    if (end < 0) {
        return 0;
    }
    if (end - at > PY_SSIZE_T_MAX / 6) { /* `size` could not have been counted */
        PyErr_NoMemory();
        return -1;
    }
    if (copy_until(scan, at, end + 1) < 0 || buffer_reserve(&scan->out, size) < 0) {
        return -1;
    }
    Buffer *out = &scan->out;
    out->data[out->length++] = '"';
    for (Py_ssize_t i = at + 1; i < end; i++) {
        unsigned char byte = text[i];
        if (byte == '\\') {
            /* An escape stays as it is, for the strict decode to judge, except \'. */
            i++;
            if (text[i] != '\'') {
                out->data[out->length++] = '\\';
            }
            out->data[out->length++] = (char)text[i];
        }
        else if (byte < 0x20) {
            out->length += control_escape(byte, out->data + out->length);
        }
        else {
            if (byte == '"') {
                out->data[out->length++] = '\\';
            }
            out->data[out->length++] = (char)byte;
        }
    }
    out->data[out->length++] = '"';
    return end + 1;
}

/* The length of a template quote token (<|"|> or <|">) at `at`, or 0. */
static Py_ssize_t
template_token(const Scan *scan, Py_ssize_t at)
{
    const unsigned char *text = scan->text + at;
    Py_ssize_t left = scan->size - at;
    if (left >= 4 && text[0] == '<' && text[1] == '|' && text[2] == '"') {
        if (text[3] == '>') {
            return 4;
        }
        if (left >= 5 && text[3] == '|' && text[4] == '>') {
            return 5;
        }
    }
    return 0;
}

/*
 * Rewrite the template-token string opened at `at`. Returns where it ends, 0 if it is
 * never closed, or -1 on a memory error.
 */
static Py_ssize_t
template_quoted(Scan *scan, Py_ssize_t at, Py_ssize_t opener)
{
    const unsigned char *text = scan->text;
    Py_ssize_t start = at + opener;
    Py_ssize_t end = start;
    Py_ssize_t closer = 0;
    for (; end < scan->size; end++) {
        if (text[end] == '<' && (closer = template_token(scan, end)) > 0) {
            break;
        }
    }
    if (closer == 0) {
        return 0;
    }
    /* The body is verbatim text: JSON needs " and \ escaped (2 bytes each) and control
       characters escaped (at most 6 bytes each). Reserve that much. */
    Py_ssize_t size = end - start + 2;
    for (Py_ssize_t i = start; i < end; i++) {
        size += text[i] < 0x20 ? 5 : (text[i] == '"' || text[i] == '\\');
    }
    if (copy_until(scan, at, end + closer) < 0 || buffer_reserve(&scan->out, size) < 0) {
        return -1;
    }
    Buffer *out = &scan->out;
    out->data[out->length++] = '"';
    for (Py_ssize_t i = start; i < end; i++) {
        unsigned char byte = text[i];
        if (byte == '"' || byte == '\\') {
            out->data[out->length++] = '\\';
            out->data[out->length++] = (char)byte;
        }
        else if (byte < 0x20) {
            out->length += control_escape(byte, out->data + out->length);
        }
        else {
            out->data[out->length++] = (char)byte;
        }
    }
    out->data[out->length++] = '"';
    return end + closer;
}

/* A Python literal's JSON spelling, or NULL. */
static const char *
python_literal(const unsigned char *word, Py_ssize_t length)
{
    if (length == 4 && memcmp(word, "True", 4) == 0) {
        return "true";
    }
    if (length == 5 && memcmp(word, "False", 5) == 0) {
        return "false";
    }
    if (length == 4 && memcmp(word, "None", 4) == 0) {
        return "null";
    }
    return NULL;
}

/* Whether a word may not become a key: a JSON or Python literal, or a bad first character. */
static int
reserved_key(const Scan *scan, Py_ssize_t at, Py_ssize_t length)
{
    const unsigned char *word = scan->text + at;
    if (python_literal(word, length) != NULL ||
        (length == 4 && (memcmp(word, "true", 4) == 0 || memcmp(word, "null", 4) == 0)) ||
        (length == 5 && memcmp(word, "false", 5) == 0) || word[0] == '-') {
        return 1;
    }
    Py_UCS4 first;
    decode_character(scan, at, &first);
    return Py_UNICODE_ISDECIMAL(first);
}

/* The open braces: one flag each, whether it wraps exactly one object. */
typedef struct {
    unsigned char *flags;
    Py_ssize_t depth;
    Py_ssize_t capacity;
} Stack;

static int
stack_push(Stack *stack, unsigned char flag)
{
    if (stack->depth == stack->capacity) {
        Py_ssize_t capacity = stack->capacity ? 2 * stack->capacity : 64;
        unsigned char *flags = PyMem_Realloc(stack->flags, (size_t)capacity);
        if (flags == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        stack->flags = flags;
        stack->capacity = capacity;
    }
    stack->flags[stack->depth++] = flag;
    return 0;
}

enum { REFUSED = 0, FAILED = -1, DONE = 1 };

/* The scan itself: DONE with the output in scan->out, REFUSED, or FAILED (an error is set). */
static int
scan_document(Scan *scan, Stack *stack, long *found)
{
    const unsigned char *text = scan->text;
    unsigned char last = 0; /* the last significant token: punctuation, or 'v' */
    int closing = 0;        /* the next significant token must be a wrapper's "}" */
    Py_ssize_t i = 0;
    while (i < scan->size) {
        unsigned char byte = text[i];
        if (is_space(byte)) {
            i++;
            continue;
        }
        if (byte == '/') {
            Py_ssize_t after = comment_end(scan, i);
            if (after < 0) {
                return REFUSED; /* a block comment that is never closed */
            }
            if (after > 0) {
                /* A comment is dropped, a space in its place; `last` is unchanged. */
                *found |= COMMENTS;
                if (copy_until(scan, i, after) < 0 || buffer_put(&scan->out, ' ') < 0) {
                    return FAILED;
                }
                i = after;
                continue;
            }
        }
        if (byte == ',') {
            unsigned char next = next_byte(scan, i + 1);
            if (next == '}' || next == ']') {
                /* A trailing comma is dropped, after a wrapped object too: "{{a: 1},}". */
                if (last == '{' || last == '[') {
                    return REFUSED; /* "[,]" is a one-hole array in JavaScript, not [] */
                }
                *found |= COMMAS;
                if (copy_until(scan, i, i + 1) < 0) {
                    return FAILED;
                }
                last = ',';
                i++;
                continue;
            }
        }
        if (closing && byte != '}') {
            return REFUSED; /* a wrapper around more than one object */
        }
        Py_ssize_t end;
        switch (byte) {
        case '{': {
            int wraps = next_byte(scan, i + 1) == '{';
            if (stack_push(stack, (unsigned char)wraps) < 0) {
                return FAILED;
            }
            if (wraps) {
                *found |= BRACES;
                if (copy_until(scan, i, i + 1) < 0) {
                    return FAILED;
                }
            }
            last = '{'; /* for a dropped wrapper too: the next token is its object's "{" */
            i++;
            continue;
        }
        case '}':
            if (stack->depth == 0) {
                return REFUSED;
            }
            if (closing && copy_until(scan, i, i + 1) < 0) { /* a wrapper's, dropped */
                return FAILED;
            }
            stack->depth--;
            closing = stack->depth > 0 && stack->flags[stack->depth - 1];
            last = '}';
            i++;
            continue;
        case ',':
        case '[':
        case ']':
        case ':':
            last = byte;
            i++;
            continue;
        case '"': {
            Py_ssize_t extra;
            end = double_quoted_end(scan, i, &extra);
            if (end < 0) {
                return REFUSED;
            }
            if (extra > 0) {
                *found |= CONTROL;
                if (double_quoted_escaped(scan, i, end, extra) < 0) {
                    return FAILED;
                }
            }
            break;
        }
        case '\'': {
            int control;
            end = single_quoted(scan, i, &control);
            if (end <= 0) {
                return end < 0 ? FAILED : REFUSED;
            }
            *found |= SINGLE_QUOTES | (control ? CONTROL : 0);
            break;
        }
        case '<': {
            Py_ssize_t opener = template_token(scan, i);
            if (opener == 0) {
                end = i + 1;
                break;
            }
            end = template_quoted(scan, i, opener);
            if (end <= 0) {
                return end < 0 ? FAILED : REFUSED;
            }
            *found |= TEMPLATE_TOKENS;
            break;
        }
        default: {
            Py_UCS4 code_point;
            Py_ssize_t length = decode_character(scan, i, &code_point);
            if (!is_word(code_point)) {
                end = i + length;
                break;
            }
            end = word_end(scan, i);
            if ((last == '{' || last == ',') && next_byte(scan, end) == ':') {
                if (reserved_key(scan, i, end - i)) {
                    return REFUSED;
                }
                *found |= KEYS;
                if (copy_until(scan, i, i) < 0 || buffer_put(&scan->out, '"') < 0 ||
                    copy_until(scan, end, end) < 0 || buffer_put(&scan->out, '"') < 0) {
                    return FAILED;
                }
                break;
            }
            const char *literal = python_literal(text + i, end - i);
            if (literal != NULL) {
                *found |= LITERALS;
                if (copy_until(scan, i, end) < 0 ||
                    buffer_write(&scan->out, literal, end - i) < 0) {
                    return FAILED;
                }
            }
            break;
        }
        }
        last = 'v';
        i = end;
    }
    if (stack->depth > 0) {
        return REFUSED;
    }
    return copy_until(scan, scan->size, scan->size) < 0 ? FAILED : DONE;
}

static PyObject *
rewrite(PyObject *module, PyObject *arg)
{
    (void)module;
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "rewrite() takes str, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (PyUnicode_READY(arg) < 0) {
        return NULL;
    }
    /* ASCII text is its own UTF-8; any other text is encoded (a temporary copy). */
    PyObject *encoded = NULL;
    const char *data;
    Py_ssize_t size;
    if (PyUnicode_IS_ASCII(arg)) {
        data = (const char *)PyUnicode_DATA(arg);
        size = PyUnicode_GET_LENGTH(arg);
    }
    else {
        encoded = PyUnicode_AsUTF8String(arg);
        if (encoded == NULL) {
            return NULL;
        }
        data = PyBytes_AS_STRING(encoded);
        size = PyBytes_GET_SIZE(encoded);
    }
    Scan scan = {(const unsigned char *)data, size, {NULL, 0, 0}, 0};
    Stack stack = {NULL, 0, 0};
    long found = 0;
    PyObject *result = NULL;
    int outcome = buffer_reserve(&scan.out, scan.size + 16) < 0
                      ? FAILED
                      : scan_document(&scan, &stack, &found);
    if (outcome == DONE) {
        /* The edits are ASCII at ASCII positions: the output is UTF-8 as the input was. */
        PyObject *text = PyUnicode_DecodeUTF8(scan.out.data, scan.out.length, "strict");
        PyObject *bits = text == NULL ? NULL : PyLong_FromLong(found);
        result = bits == NULL ? NULL : PyTuple_Pack(2, text, bits);
        Py_XDECREF(text);
        Py_XDECREF(bits);
    }
    else if (outcome == REFUSED) {
        result = Py_NewRef(Py_None);
    }
    Py_XDECREF(encoded);
    PyMem_Free(scan.out.data);
    PyMem_Free(stack.flags);
    return result;
}

/*
 * keys_may_repeat(text: str | bytes) -> bool
 *
 * Whether JSON `text` may repeat a key within one object, at any depth: False only when
 * every object's keys, as spelled, are distinct and no key holds a backslash escape (an
 * escape may spell a key another key spells plainly, so such text is left to the exact
 * check in Python, as is anything this scan cannot follow). A string is a key when the
 * next character that is not whitespace is a colon. One pass; each object's keys are
 * compared when it closes (sorted, past a few keys), so any text takes O(n log n).
 * tests/declare/test_validate_key_bound.py spells these answers out in Python (_spelled_repeat) and holds
 * this scan to them on any text, JSON or not.
 */
typedef struct {
    const char *start; /* the key's first code unit */
    Py_ssize_t size;   /* its size in bytes */
} Key;

typedef struct {
    Key *keys;
    Py_ssize_t count, capacity;
    Py_ssize_t *frames; /* for each open object: where its keys start in `keys` */
    Py_ssize_t depth, frames_capacity;
    Key keys_here[32];
    Py_ssize_t frames_here[16];
} KeyScan;

static int
compare_keys(const void *a, const void *b)
{
    const Key *x = a, *y = b;
    if (x->size != y->size) {
        return x->size < y->size ? -1 : 1;
    }
    return memcmp(x->start, y->start, (size_t)x->size);
}

/* Whether keys[from:] repeats a key (sorts them, when there are more than a few). */
static int
repeats(Key *keys, Py_ssize_t from, Py_ssize_t to)
{
    Py_ssize_t n = to - from;
    Key *first = keys + from;
    if (n <= 8) {
        for (Py_ssize_t i = 1; i < n; i++) {
            for (Py_ssize_t j = 0; j < i; j++) {
                if (first[i].size == first[j].size &&
                    memcmp(first[i].start, first[j].start, (size_t)first[i].size) == 0) {
                    return 1;
                }
            }
        }
        return 0;
    }
    qsort(first, (size_t)n, sizeof(Key), compare_keys);
    for (Py_ssize_t i = 1; i < n; i++) {
        if (compare_keys(first + i - 1, first + i) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Grow a scan array (`here` is its first, stack-held storage); -1 with MemoryError. */
static int
grow(void **items, Py_ssize_t *capacity, size_t item_size, void *here)
{
    if (*capacity > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)item_size) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t larger = *capacity * 2;
    void *grown;
    if (*items == here) {
        grown = PyMem_Malloc((size_t)larger * item_size);
        if (grown != NULL) {
            memcpy(grown, here, (size_t)*capacity * item_size);
        }
    }
    else {
        grown = PyMem_Realloc(*items, (size_t)larger * item_size);
    }
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = grown;
    *capacity = larger;
    return 0;
}

/* 1: a key may repeat; 0: none does; -1: an error is set. */
#define SCAN_KEYS(NAME, UNIT)                                                              \
    static int NAME(KeyScan *scan, const UNIT *text, Py_ssize_t size)                      \
    {                                                                                      \
        for (Py_ssize_t at = 0; at < size; at++) {                                         \
            UNIT c = text[at];                                                             \
            if (c == '"') {                                                                \
                Py_ssize_t start = ++at;                                                   \
                int escaped = 0;                                                           \
                while (at < size && text[at] != '"') {                                     \
                    if (text[at] == '\\') {                                                \
                        escaped = 1;                                                       \
                        at++;                                                              \
                    }                                                                      \
                    at++;                                                                  \
                }                                                                          \
                if (at >= size) {                                                          \
                    return 1; /* not JSON: the exact check decides */                      \
                }                                                                          \
                Py_ssize_t next = at + 1;                                                  \
                while (next < size && (text[next] == ' ' || text[next] == '\n' ||          \
                                       text[next] == '\t' || text[next] == '\r')) {        \
                    next++;                                                                \
                }                                                                          \
                if (next < size && text[next] == ':') {                                    \
                    if (escaped || scan->depth == 0) {                                     \
                        return 1;                                                          \
                    }                                                                      \
                    if (scan->count == scan->capacity &&                                   \
                        grow((void **)&scan->keys, &scan->capacity, sizeof(Key),           \
                             scan->keys_here) < 0) {                                       \
                        return -1;                                                         \
                    }                                                                      \
                    scan->keys[scan->count].start = (const char *)(text + start);          \
                    scan->keys[scan->count].size = (at - start) * (Py_ssize_t)sizeof(UNIT); \
                    scan->count++;                                                         \
                }                                                                          \
            }                                                                              \
            else if (c == '{') {                                                           \
                if (scan->depth == scan->frames_capacity &&                                \
                    grow((void **)&scan->frames, &scan->frames_capacity,                   \
                         sizeof(Py_ssize_t), scan->frames_here) < 0) {                     \
                    return -1;                                                             \
                }                                                                          \
                scan->frames[scan->depth++] = scan->count;                                 \
            }                                                                              \
            else if (c == '}') {                                                           \
                if (scan->depth == 0) {                                                    \
                    return 1;                                                              \
                }                                                                          \
                Py_ssize_t from = scan->frames[--scan->depth];                             \
                if (repeats(scan->keys, from, scan->count)) {                              \
                    return 1;                                                              \
                }                                                                          \
                scan->count = from;                                                        \
            }                                                                              \
        }                                                                                  \
        return scan->depth != 0;                                                           \
    }

SCAN_KEYS(scan_keys_1, Py_UCS1)
SCAN_KEYS(scan_keys_2, Py_UCS2)
SCAN_KEYS(scan_keys_4, Py_UCS4)

static PyObject *
keys_may_repeat(PyObject *module, PyObject *text)
{
    KeyScan scan;
    scan.keys = scan.keys_here;
    scan.count = 0;
    scan.capacity = 32;
    scan.frames = scan.frames_here;
    scan.depth = 0;
    scan.frames_capacity = 16;
    int found;
    if (PyUnicode_Check(text)) {
        if (PyUnicode_READY(text) < 0) {
            return NULL;
        }
        const void *data = PyUnicode_DATA(text);
        Py_ssize_t size = PyUnicode_GET_LENGTH(text);
        switch (PyUnicode_KIND(text)) {
        case PyUnicode_1BYTE_KIND:
            found = scan_keys_1(&scan, data, size);
            break;
        case PyUnicode_2BYTE_KIND:
            found = scan_keys_2(&scan, data, size);
            break;
        default:
            found = scan_keys_4(&scan, data, size);
            break;
        }
    }
    else if (PyBytes_Check(text)) {
        found = scan_keys_1(&scan, (const Py_UCS1 *)PyBytes_AS_STRING(text),
                            PyBytes_GET_SIZE(text));
    }
    else {
        PyErr_Format(PyExc_TypeError, "keys_may_repeat() takes str or bytes, not %.100s",
                     Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (scan.keys != scan.keys_here) {
        PyMem_Free(scan.keys);
    }
    if (scan.frames != scan.frames_here) {
        PyMem_Free(scan.frames);
    }
    if (found < 0) {
        return NULL;
    }
    return PyBool_FromLong(found);
}

/*
 * unrepeated_decoder(decode, refuse) -> Callable[[str | bytes], object]
 *
 * tinytools/_declare/decode.py's checked decoder, compiled: a function of `text` that returns
 * decode(text), after calling refuse(text) when keys_may_repeat(text) (refuse raises when
 * a key does repeat). It is a builtin function bound to the pair (decode, refuse), so a
 * call is one METH_O dispatch: no Python frame, and no argument copying as through
 * functools.partial (which cost about as much as the scan of a short text).
 */
static PyObject *
decode_unrepeated(PyObject *pair, PyObject *text)
{
    PyObject *value = PyObject_CallOneArg(PyTuple_GET_ITEM(pair, 0), text);
    if (value == NULL) {
        return NULL;
    }
    PyObject *maybe = keys_may_repeat(NULL, text);
    if (maybe == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    if (maybe == Py_True) {
        PyObject *refused = PyObject_CallOneArg(PyTuple_GET_ITEM(pair, 1), text);
        if (refused == NULL) {
            Py_DECREF(maybe);
            Py_DECREF(value);
            return NULL;
        }
        Py_DECREF(refused);
    }
    Py_DECREF(maybe);
    return value;
}

static PyMethodDef decode_unrepeated_definition = {
    "decode_unrepeated", decode_unrepeated, METH_O,
    "decode_unrepeated(text) -> object\n\n"
    "decode(text), then refuse(text) when keys_may_repeat(text) "
    "(see unrepeated_decoder).",
};

static PyObject *
unrepeated_decoder(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "unrepeated_decoder() takes 2 arguments");
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, args[0], args[1]);
    if (pair == NULL) {
        return NULL;
    }
    PyObject *decoder = PyCFunction_NewEx(&decode_unrepeated_definition, pair, NULL);
    Py_DECREF(pair);
    return decoder;
}

static PyMethodDef methods[] = {
    {"rewrite", rewrite, METH_O,
     "rewrite(text: str) -> tuple[str, int] | None\n\n"
     "Rewrite a relaxed-JSON object document into strict JSON, with the bits of "
     "what changed, or None when it is refused."},
    {"keys_may_repeat", keys_may_repeat, METH_O,
     "keys_may_repeat(text: str | bytes) -> bool\n\n"
     "Whether JSON text may repeat a key within an object (False: certainly not)."},
    {"unrepeated_decoder", (PyCFunction)(void (*)(void))unrepeated_decoder, METH_FASTCALL,
     "unrepeated_decoder(decode, refuse) -> Callable[[str | bytes], object]\n\n"
     "A function of text: decode(text), after refuse(text) when keys_may_repeat(text)."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_GIL_DISABLED
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tinytools._relaxed_speedups",
    .m_doc = "The relaxed-JSON scanner of tinytools._relaxed and the repeated-key bound of tinytools._declare.decode, compiled.",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__relaxed_speedups(void)
{
    return PyModuleDef_Init(&module_definition);
}
