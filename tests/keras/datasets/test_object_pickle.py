"""Tests for the pickle-free reader of object arrays in `.npz` files (IMDB, Reuters).

Object arrays written by numpy itself (every pickle protocol, numpy 1 and Python 2 spellings)
must decode to what numpy's own unpickling gives; anything else, above all a pickle that calls
a function, must be refused without running it.
"""

import io
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest

from kiln.keras.datasets import _npz
from kiln.keras.datasets._object_pickle import RefusedPickle, decode_object_array


def ragged(seed=0, count=40, longest=600):
    """An object array of int lists, from empty to longer than one APPENDS batch (1000)."""
    rng = np.random.default_rng(seed)
    array = np.empty(count, dtype=object)
    for i in range(count):
        array[i] = [int(v) for v in rng.integers(0, 90000, rng.integers(0, longest))]
    specials = [[], [0, 255, 256, 65535, 65536, 2**31 - 1, -1, -(2**31), 2**40, -(2**40)],
                list(range(2500))]  # the last: several APPENDS batches
    for i, special in enumerate(specials[:count - 1]):
        array[i + 1] = special
    return array


def assert_same_objects(got, want):
    assert got.dtype == object and got.shape == want.shape
    for a, b in zip(got.ravel(), want.ravel()):
        assert type(a) is type(b) and a == b
        if type(a) is list:
            assert all(type(v) is int for v in a)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_decodes_what_pickle_decodes(protocol):
    array = ragged()
    assert_same_objects(decode_object_array(pickle.dumps(array, protocol=protocol)), array)


def test_two_dimensional_object_array_of_ints():
    array = np.array([[1, 2, 3], [4, 5, 6]], dtype=object)
    assert_same_objects(decode_object_array(pickle.dumps(array)), array)
    fortran = np.asfortranarray(array)
    assert_same_objects(decode_object_array(pickle.dumps(fortran, protocol=2)), fortran)


def test_numpy1_module_name_and_memo_reuse():
    """numpy 1 named `numpy.core.multiarray`; a list pickled twice is fetched from the memo."""
    shared = [7, 8, 9]
    array = np.empty(3, dtype=object)
    array[0], array[1], array[2] = shared, [1], shared
    blob = pickle.dumps(array, protocol=3).replace(b"numpy._core.multiarray",
                                                   b"numpy.core.multiarray")
    assert b"h" in blob[blob.index(b"]"):]  # BINGET of the shared list
    assert_same_objects(decode_object_array(blob), array)


def python2_object_array(sequences):
    """An object array of int lists pickled as Python 2's numpy wrote it (protocol 2,
    SHORT_BINSTRING for str), opcode by opcode."""
    body = b"".join(b"](" + b"".join(b"K%c" % v for v in seq) + b"e" if seq else b"]"
                    for seq in sequences)
    return b"".join([
        b"\x80\x02cnumpy.core.multiarray\n_reconstruct\nq\x01cnumpy\nndarray\nq\x02",
        b"K\x00\x85U\x01b\x87R",
        b"(K\x01K%c\x85cnumpy\ndtype\nU\x02O8K\x00K\x01\x87R" % len(sequences),
        b"(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb",
        b"\x89](" + body + b"etb."])


def test_python2_protocol2_file_layout():
    sequences = [[1, 14, 22], [], [5]]
    blob = python2_object_array(sequences)
    reference = pickle.loads(blob)  # the hand-made stream is valid: numpy agrees
    assert [list(x) for x in reference] == sequences
    got = decode_object_array(blob)
    assert got.dtype == object and [x for x in got] == sequences


def test_python2_ints_beyond_32_bits():
    blob = python2_object_array([[1]]).replace(b"](K\x01e", b"](I4294967296\n\x8a\x01\xffe")
    assert list(pickle.loads(blob)[0]) == [2**32, -1]
    assert decode_object_array(blob)[0] == [2**32, -1]


class CallsOsSystem:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class CallsEval:
    def __reduce__(self):
        return (eval, ("1 + 1",))


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_os_system_inside_an_object_array_is_refused_unrun(tmp_path, protocol):
    marker = tmp_path / "ran"
    array = ragged(count=3)
    array[2] = CallsOsSystem(marker)
    blob = pickle.dumps(array, protocol=protocol)
    with pytest.raises(RefusedPickle, match=r"refusing global (posix|os)\.system"):
        decode_object_array(blob)
    assert not marker.exists()
    pickle.loads(blob)  # the payload is live: plain pickle runs it
    assert marker.exists()


@pytest.mark.parametrize("payload,refused", [
    (pickle.dumps(CallsEval()), "refusing global builtins.eval"),
    (b"\x80\x02csubprocess\nPopen\n.", "refusing global subprocess.Popen"),
    (pickle.dumps(np.float64(1.0)), "refusing global numpy"),
    (pickle.dumps(np.arange(3)), "refusing dtype"),  # a plain array has no business here
    (pickle.dumps({"a": 1}), "refusing opcode EMPTY_DICT"),
    (pickle.dumps(1.5), "refusing opcode BINFLOAT"),
    (b"\x80\x04\x8c\x02os\x8c\x06system\x93.", "refusing global os.system"),
    (b"cnumpy\nndarray\n)\x81.", "refusing opcode NEWOBJ"),
    (b"(cnumpy\ndtype\no.", "refusing opcode OBJ"),
    (b"(ios\nsystem\n.", "refusing opcode INST"),
    (b"\x80\x02cnumpy\ndtype\nU\x02f8\x85R.", "refusing dtype"),
    (b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\ndtype\nK\x00\x85C\x01b\x87R.",
     "unexpected arguments to _reconstruct"),
    (b"\x80\x02](K\x01eK\x02b.", "refusing BUILD of list"),
    (b"\x80\x02]cnumpy\nndarray\n)R.", "refusing to call"),
    (b"\x80\x02]", "ends without STOP"),
    (b"\x80\x02]K", "ends in the middle"),
    (b"\x80\x02]\x8a\x10" + b"\x01" * 16 + b".", "16-byte LONG1"),
    (b"\x80\x02h\x05.", "memo read of unknown entry"),
    (pickle.dumps([1, 2]), "not a numpy array"),
])
def test_refusals(payload, refused):
    with pytest.raises(RefusedPickle, match=refused):
        decode_object_array(payload)


@pytest.mark.parametrize("element,refused", [
    ("text", "element 0 is a str"),
    ([1, 2.5], "list of something other than ints"),
    ([1, [2]], "list of something other than ints"),
    ([True], "list of something other than ints"),
])
def test_elements_other_than_int_lists_are_refused(element, refused):
    array = np.empty(1, dtype=object)
    array[0] = element
    blob = pickle.dumps(array, protocol=2)
    if isinstance(element, list) and 2.5 in element:
        with pytest.raises(RefusedPickle, match="BINFLOAT"):
            decode_object_array(blob)
        return
    with pytest.raises(RefusedPickle, match=refused):
        decode_object_array(blob)


def test_npz_mixes_plain_and_object_members(tmp_path):
    x = ragged(count=5)
    y = np.array([0, 1, 1, 0, 1], dtype=np.int64)
    np.savez(tmp_path / "d.npz", x=x, y=y, z=np.zeros((2, 3), np.float32))
    arrays = _npz.load_npz(tmp_path / "d.npz")
    assert sorted(arrays) == ["x", "y", "z"]
    assert_same_objects(arrays["x"], x)
    assert arrays["y"].dtype == np.int64 and list(arrays["y"]) == list(y)
    assert arrays["z"].shape == (2, 3) and arrays["z"].dtype == np.float32


def test_npz_version_2_header(tmp_path):
    x = ragged(count=4)
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, x, version=(2, 0), allow_pickle=True)
    with zipfile.ZipFile(tmp_path / "v2.npz", "w") as archive:
        archive.writestr("x.npy", buffer.getvalue())
    assert_same_objects(_npz.load_npz(tmp_path / "v2.npz")["x"], x)


def test_malicious_npz_names_file_and_member(tmp_path):
    marker = tmp_path / "ran"
    evil = np.empty(2, dtype=object)
    evil[0], evil[1] = [1, 2], CallsOsSystem(marker)
    np.savez(tmp_path / "evil.npz", x_train=evil, y_train=np.zeros(2, np.int64))
    with pytest.raises(ValueError, match=r"evil\.npz: refused member x_train\.npy: "
                                         r"refusing global (posix|os)\.system") as info:
        _npz.load_npz(tmp_path / "evil.npz")
    assert "nothing in it was executed" in str(info.value)
    assert not marker.exists()


def test_header_and_pickle_shapes_must_agree(tmp_path):
    x = ragged(count=3)
    header = np.lib.format.header_data_from_array_1_0(x)
    header["shape"] = (4,)
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    buffer.write(pickle.dumps(x, protocol=3))
    with zipfile.ZipFile(tmp_path / "s.npz", "w") as archive:
        archive.writestr("x.npy", buffer.getvalue())
    with pytest.raises(ValueError, match=r"header says shape \(4,\), the data has \(3,\)"):
        _npz.load_npz(tmp_path / "s.npz")


def test_not_a_zip_file(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"not a zip" + struct.pack("<I", 7))
    with pytest.raises(ValueError, match=r"bad\.npz: not a readable \.npz"):
        _npz.load_npz(tmp_path / "bad.npz")


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_int_runs_longer_than_the_decoding_chunk(monkeypatch, chunk):
    from kiln.keras.datasets import _object_pickle
    monkeypatch.setattr(_object_pickle, "_INT_CHUNK", chunk)
    array = ragged(count=4)
    assert_same_objects(decode_object_array(pickle.dumps(array, protocol=4)), array)


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_damaged_streams_decode_or_are_refused_nothing_else(protocol):
    """Random byte changes: the result is an array of int lists or RefusedPickle, never
    another exception (or a crash)."""
    array = ragged(count=3, longest=20)
    blob = pickle.dumps(array, protocol=protocol)
    rng = np.random.default_rng(protocol)
    outcomes = set()
    for _ in range(400):
        damaged = bytearray(blob)
        for position in rng.integers(0, len(blob), rng.integers(1, 4)):
            damaged[position] = rng.integers(256)
        try:
            result = decode_object_array(bytes(damaged))
        except RefusedPickle:
            outcomes.add("refused")
            continue
        outcomes.add("decoded")
        assert result.dtype == object
    assert "refused" in outcomes


def test_shape_products_are_exact():
    """(2**32, 2**32) wraps to 0 in int64: an empty element list must not pass for it."""
    blob = pickle.dumps(np.empty(0, dtype=object), protocol=2)
    state_shape = b"K\x01K\x00\x85q"  # version 1, shape (0,)
    assert state_shape in blob
    blob = blob.replace(state_shape, b"K\x01\x8a\x05\x00\x00\x00\x00\x01"
                                     b"\x8a\x05\x00\x00\x00\x00\x01\x86q")
    with pytest.raises(RefusedPickle, match="without as many elements"):
        decode_object_array(blob)
