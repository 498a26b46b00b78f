"""Decoding the pickle inside a `.npy` object array without running pickle.

Keras's IMDB and Reuters files store ragged sequences as numpy object arrays of Python lists
of ints, which numpy can only write as a pickle. Instead of handing that stream to `pickle`
(whose `find_class` + `REDUCE` can call anything), this module interprets it itself, one
opcode at a time, with a whitelist of opcodes: the ones `np.save` writes for such an array
with protocols 2 to 5, from Python 2 or 3 and numpy 1 or 2. Globals are never imported: the
four names an object array needs (`_reconstruct`, `ndarray`, `dtype`, and `_codecs.encode`,
protocol 2's spelling of bytes) become inert markers, `REDUCE` accepts only those, and `BUILD`
only the array and dtype they produced. Every other opcode or global is refused before
anything happens, with `RefusedPickle` naming it.
"""

import math
import re

import numpy as np

from ...ops.numba_config import njit

MAX_LONG1_BYTES = 8  # ints wider than 64 bits are no word index


class RefusedPickle(ValueError):
    """The pickle uses an opcode, global or call that an object array of int lists doesn't."""


class _Global:
    """An allowed global, by name only: nothing is imported."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


_RECONSTRUCT, _NDARRAY = _Global("_reconstruct"), _Global("numpy.ndarray")
_DTYPE, _ENCODE = _Global("numpy.dtype"), _Global("_codecs.encode")
_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): _DTYPE,
    ("_codecs", "encode"): _ENCODE,
}
_OBJECT_DTYPE_NAMES = ("O", "O4", "O8")


class _ArrayRecord:
    """`_reconstruct(ndarray, ...)`'s result; its state arrives with BUILD."""

    state = None


class _DtypeRecord:
    """`dtype('O8', ...)`'s result; BUILD gives it byte order and flags, ignored for objects."""


_INT_OPCODES = b"KMJ"  # BININT1, BININT2, BININT: almost every byte of a sequence file
_INT_CHUNK = 1 << 16


@njit(cache=True, nogil=True)
def _decode_int_run(data, start, out):
    """Decodes the run of BININT1 / BININT2 / BININT opcodes at `start` into `out`.

    Returns (position after the run, number of ints), or (-1, 0) when the stream ends inside
    an opcode; a run longer than `out` stops when `out` is full. Compiled: a Python loop over
    the millions of opcodes of IMDB took tens of seconds.
    """
    pos, count, size = start, 0, data.shape[0]
    while pos < size and count < out.shape[0]:
        code = data[pos]
        if code == 75:  # K: one unsigned byte
            if pos + 2 > size:
                return -1, 0
            out[count] = data[pos + 1]
            pos += 2
        elif code == 77:  # M: two unsigned bytes, little-endian
            if pos + 3 > size:
                return -1, 0
            out[count] = data[pos + 1] | (np.int64(data[pos + 2]) << 8)
            pos += 3
        elif code == 74:  # J: four bytes, signed little-endian
            if pos + 5 > size:
                return -1, 0
            value = (np.int64(data[pos + 1]) | (np.int64(data[pos + 2]) << 8)
                     | (np.int64(data[pos + 3]) << 16) | (np.int64(data[pos + 4]) << 24))
            out[count] = value - (1 << 32) if value >= (1 << 31) else value
            pos += 5
        else:
            break
        count += 1
    return pos, count


def _text(value):
    return value.decode("latin1") if isinstance(value, bytes) else value


class _Machine:
    """A pickle stack machine that knows only what an object array of int lists needs."""

    def __init__(self, payload):
        self.data, self.pos = payload, 0
        self.bytes = np.frombuffer(payload, dtype=np.uint8)
        self.ints = np.empty(_INT_CHUNK, dtype=np.int64)  # one chunk of a decoded run
        self.stack, self.memo = [], {}
        self.marks = []  # stack heights at each open MARK, as pickle's own metastack

    # Reading the stream
    def take(self, count):
        if self.pos + count > len(self.data):
            raise RefusedPickle("the pickle ends in the middle of an opcode")
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def line(self):
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise RefusedPickle("the pickle ends in the middle of a text argument")
        text = self.data[self.pos:end]
        self.pos = end + 1
        return text.decode("ascii", "strict")

    def unsigned(self, count):
        return int.from_bytes(self.take(count), "little")

    def pop_mark(self):
        """Pops the items above the topmost MARK (and the mark)."""
        if not self.marks:
            raise RefusedPickle("an opcode needs a MARK that is not there")
        start = self.marks.pop()
        items = self.stack[start:]
        del self.stack[start:]
        return items

    def pop(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise RefusedPickle("an opcode needs a value the stack does not have")
        return self.stack.pop()

    def run(self):
        handlers = _HANDLERS
        while True:
            if self.pos >= len(self.data):
                raise RefusedPickle("the pickle ends without STOP")
            code = self.data[self.pos:self.pos + 1]
            if code in _INT_OPCODES:
                self.push_int_run()
                continue
            self.pos += 1
            if code == b".":
                if len(self.stack) != 1 or self.marks:
                    raise RefusedPickle("STOP without exactly one value on the stack")
                return self.stack[0]
            handler = handlers.get(code)
            if handler is None:
                raise RefusedPickle(f"refusing opcode {_opcode_name(code)} at byte "
                                    f"{self.pos - 1}")
            handler(self)

    def push_int_run(self):
        count = len(self.ints)
        while count == len(self.ints):  # a full chunk: the run may go on
            end, count = _decode_int_run(self.bytes, self.pos, self.ints)
            if end < 0:
                raise RefusedPickle("the pickle ends in the middle of an int opcode")
            self.pos = end
            self.stack.extend(self.ints[:count].tolist())


def _global(machine, module, name):
    marker = _ALLOWED_GLOBALS.get((module, name))
    if marker is None:
        raise RefusedPickle(f"refusing global {module}.{name}")
    machine.stack.append(marker)


def _stack_global(machine):
    name, module = machine.pop(), machine.pop()
    if not (isinstance(module, str) and isinstance(name, str)):
        raise RefusedPickle("STACK_GLOBAL on something other than two names")
    _global(machine, module, name)


def _reduce(machine):
    args, func = machine.pop(), machine.pop()
    if not isinstance(args, tuple):
        raise RefusedPickle("REDUCE with arguments that are not a tuple")
    if func is _RECONSTRUCT:
        if not (len(args) == 3 and args[0] is _NDARRAY and isinstance(args[1], tuple)):
            raise RefusedPickle(f"unexpected arguments to _reconstruct: {args!r}")
        machine.stack.append(_ArrayRecord())
    elif func is _DTYPE:
        if not args or _text(args[0]) not in _OBJECT_DTYPE_NAMES:
            raise RefusedPickle(f"refusing dtype {args[:1]!r}: only an object array's "
                                "dtype ('O') needs pickle")
        machine.stack.append(_DtypeRecord())
    elif func is _ENCODE:
        if not (len(args) == 2 and isinstance(args[0], str) and args[1] == "latin1"):
            raise RefusedPickle(f"unexpected arguments to _codecs.encode: {args!r}")
        machine.stack.append(args[0].encode("latin1"))
    else:
        raise RefusedPickle(f"refusing to call {type(func).__name__} {func!r}")


def _build(machine):
    state = machine.pop()
    target = machine.stack[-1] if machine.stack else None
    if isinstance(target, _ArrayRecord) and target.state is None:
        target.state = state
    elif not isinstance(target, _DtypeRecord):
        raise RefusedPickle(f"refusing BUILD of {type(target).__name__}")


def _append(machine):
    value = machine.pop()
    _append_to(machine, [value])


def _appends(machine):
    _append_to(machine, machine.pop_mark())


def _append_to(machine, values):
    if not machine.stack or type(machine.stack[-1]) is not list:
        raise RefusedPickle("APPEND to something other than a list")
    machine.stack[-1].extend(values)


def _memo_put(machine, key):
    if not machine.stack:
        raise RefusedPickle("memo store with an empty stack")
    machine.memo[key] = machine.stack[-1]


def _memo_get(machine, key):
    if key not in machine.memo:
        raise RefusedPickle(f"memo read of unknown entry {key}")
    machine.stack.append(machine.memo[key])


def _long1(machine):
    size = machine.unsigned(1)
    if size > MAX_LONG1_BYTES:
        raise RefusedPickle(f"refusing a {size}-byte LONG1 integer")
    machine.stack.append(int.from_bytes(machine.take(size), "little", signed=True))


def _int_text(machine):  # INT: Python 2's spelling of ints beyond 32 bits
    text = machine.line()
    if not re.fullmatch(r"-?[0-9]{1,20}", text):
        raise RefusedPickle(f"refusing INT argument {text!r}")
    machine.stack.append(int(text))


def _tuple_of(count):
    def handler(machine):
        items = [machine.pop() for _ in range(count)][::-1]
        machine.stack.append(tuple(items))
    return handler


def _push(value):
    def handler(machine):
        machine.stack.append(value)
    return handler


def _sized(kind, width):
    """Handlers for bytes/str opcodes: a little-endian length of `width` bytes, then data."""
    def handler(machine):
        raw = machine.take(machine.unsigned(width))
        if kind == "str":
            machine.stack.append(raw.decode("utf-8"))
        elif kind == "py2str":  # Python 2 str: text the way pickle's default ASCII reads it
            machine.stack.append(raw.decode("ascii"))
        else:
            machine.stack.append(raw)
    return handler


def _proto(machine):
    if machine.unsigned(1) > 5:
        raise RefusedPickle("unknown pickle protocol")


def _frame(machine):
    machine.take(8)  # a length hint for buffered readers; the opcodes go on after it


_HANDLERS = {
    b"\x80": _proto,
    b"\x95": _frame,
    b"c": lambda m: _global(m, m.line(), m.line()),
    b"\x93": _stack_global,
    b"R": _reduce,
    b"b": _build,
    b"(": lambda m: m.marks.append(len(m.stack)),
    b"t": lambda m: m.stack.append(tuple(m.pop_mark())),
    b")": _push(()),
    b"\x85": _tuple_of(1),
    b"\x86": _tuple_of(2),
    b"\x87": _tuple_of(3),
    b"]": lambda m: m.stack.append([]),
    b"a": _append,
    b"e": _appends,
    b"N": _push(None),
    b"\x88": _push(True),
    b"\x89": _push(False),
    b"\x8a": _long1,
    b"I": _int_text,
    b"C": _sized("bytes", 1),
    b"B": _sized("bytes", 4),
    b"U": _sized("py2str", 1),
    b"T": _sized("py2str", 4),
    b"\x8c": _sized("str", 1),
    b"X": _sized("str", 4),
    b"q": lambda m: _memo_put(m, m.unsigned(1)),
    b"r": lambda m: _memo_put(m, m.unsigned(4)),
    b"\x94": lambda m: _memo_put(m, len(m.memo)),
    b"h": lambda m: _memo_get(m, m.unsigned(1)),
    b"j": lambda m: _memo_get(m, m.unsigned(4)),
}


def _opcode_name(code):
    import pickletools  # a table of names only; nothing in it unpickles

    for opcode in pickletools.opcodes:
        if opcode.code.encode("latin1") == code:
            return f"{opcode.name} ({code!r})"
    return f"{code!r}"


def decode_object_array(payload):
    """Returns the object array a `.npy` pickle payload describes.

    Args:
        payload: The bytes after the `.npy` header.

    Returns:
        A numpy object array whose elements are Python ints or lists of Python ints.

    Raises:
        RefusedPickle: anything else, or a malformed stream; nothing has been executed.
    """
    try:
        record = _Machine(payload).run()
    except UnicodeDecodeError as err:
        raise RefusedPickle(f"a name or string that is not valid text ({err})") from err
    if not isinstance(record, _ArrayRecord) or record.state is None:
        raise RefusedPickle(f"the pickle holds {type(record).__name__}, not a numpy array")
    state = record.state
    if not (isinstance(state, tuple) and len(state) == 5):
        raise RefusedPickle("unexpected numpy array state")
    _, shape, dtype, fortran, items = state
    if not isinstance(dtype, _DtypeRecord):
        raise RefusedPickle("the array's dtype is not an object dtype")
    if not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)):
        raise RefusedPickle(f"unexpected array shape {shape!r}")
    if type(items) is not list or len(items) != math.prod(shape):  # exact, no int64 wrap
        raise RefusedPickle(f"array of shape {shape} without as many elements")
    for index, item in enumerate(items):
        if type(item) is list:
            if not set(map(type, item)) <= {int}:
                raise RefusedPickle(f"element {index} is a list of something other than ints")
        elif type(item) is not int:
            raise RefusedPickle(f"element {index} is a {type(item).__name__}, not a list of "
                                "ints")
    array = np.empty(len(items), dtype=object)
    for index, item in enumerate(items):
        array[index] = item
    # numpy lists an object array's elements in C order even when `fortran` is set
    return array.reshape(shape)
