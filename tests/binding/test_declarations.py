"""kiln/binding/{constants,library}.py against the oneDNN 3.2 C headers.

The headers come from the `onednn-devel-cpu-gomp` wheel (installed under `<sys.prefix>/include`).
A small C program prints every constant kiln hard-codes; prototypes are parsed from the
preprocessed header and compared with `kiln.binding.library.DECLARATIONS` (argument count,
argument kind and return kind).
"""

import ast
import ctypes
import os
import re
import shutil
import subprocess
import sys

import pytest

from kiln.binding import constants, library

INCLUDE = os.path.join(sys.prefix, "include")
HEADER = os.path.join(INCLUDE, "oneapi", "dnnl", "dnnl.h")
GCC = shutil.which("gcc")

pytestmark = [
    pytest.mark.skipif(GCC is None, reason="gcc is not installed: cannot compile the oneDNN "
                                           "headers to check kiln's constants"),
    pytest.mark.skipif(not os.path.exists(HEADER),
                       reason=f"oneDNN headers not found at {HEADER}; install the test extra "
                              "`pip install onednn-devel-cpu-gomp==2023.2.0`"),
]

# Numbers that kiln/binding/memory.py passes to dnnl_memory_desc_query without a name.
INLINE_QUERIES = {"query_strides": 14, "query_inner_nblks_s32": 263,
                  "query_inner_blks": 264, "query_inner_idxs": 265}


def c_name(name):
    """kiln's constant name -> the C identifier it stands for."""
    if name.startswith("ARG_") or name == "MAX_NDIMS":
        return "DNNL_" + name
    return "dnnl_" + name


def kiln_constants():
    return {name: value for name, value in vars(constants).items()
            if not name.startswith("_") and isinstance(value, int)
            and not isinstance(value, bool)}


def status_names():
    return {f"status:{name}": code for code, name in constants.STATUS_NAMES.items()}


@pytest.fixture(scope="module")
def header_values(tmp_path_factory):
    """{kiln name: value in the header}, from a compiled C program."""
    names = dict(kiln_constants())
    names.update(INLINE_QUERIES)
    lines = [f'    printf("%s %lld\\n", "{name}", (long long)({c_name(name)}));'
             for name in names]
    lines += [f'    printf("%s %lld\\n", "status:{name}", (long long)(dnnl_{name}));'
              for name in constants.STATUS_NAMES.values()]
    lines += ['    printf("%s %lld\\n", "sizeof:exec_arg", (long long)sizeof(dnnl_exec_arg_t));',
              '    printf("%s %lld\\n", "offsetof:exec_arg.memory", '
              '(long long)offsetof(dnnl_exec_arg_t, memory));',
              '    printf("%s %lld\\n", "sizeof:version", (long long)sizeof(dnnl_version_t));',
              '    printf("%s %lld\\n", "offsetof:version.hash", '
              '(long long)offsetof(dnnl_version_t, hash));',
              '    printf("%s %lld\\n", "offsetof:version.cpu_runtime", '
              '(long long)offsetof(dnnl_version_t, cpu_runtime));',
              '    printf("%s %lld\\n", "sizeof:dim", (long long)sizeof(dnnl_dim_t));']
    source = ("#include <stdio.h>\n#include <stddef.h>\n#include <oneapi/dnnl/dnnl.h>\n"
              "int main(void) {\n" + "\n".join(lines) + "\n    return 0;\n}\n")
    directory = tmp_path_factory.mktemp("dnnl_constants")
    (directory / "constants.c").write_text(source)
    binary = directory / "constants"
    result = subprocess.run([GCC, "-std=c99", "-I", INCLUDE, str(directory / "constants.c"),
                             "-o", str(binary)], capture_output=True, text=True)
    assert result.returncode == 0, f"compiling the constants program failed:\n{result.stderr}"
    output = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    values = {}
    for line in output.splitlines():
        name, value = line.rsplit(" ", 1)
        values[name] = int(value)
    return values


@pytest.fixture(scope="module")
def preprocessed():
    """The public C API after the preprocessor, comments gone."""
    result = subprocess.run([GCC, "-E", "-P", "-I", INCLUDE, "-x", "c", "-"],
                            input="#include <oneapi/dnnl/dnnl.h>\n",
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("name", sorted(kiln_constants()))
def test_constant_matches_header(name, header_values):
    assert getattr(constants, name) == header_values[name], (
        f"kiln.binding.constants.{name} = {getattr(constants, name)} but "
        f"{c_name(name)} = {header_values[name]} in the oneDNN headers")


@pytest.mark.parametrize("name", sorted(INLINE_QUERIES))
def test_inline_query_numbers_in_memory_py(name, header_values):
    assert INLINE_QUERIES[name] == header_values[name]


@pytest.mark.parametrize("code", sorted(constants.STATUS_NAMES))
def test_status_names(code, header_values):
    name = constants.STATUS_NAMES[code]
    assert header_values[f"status:{name}"] == code
    assert getattr(constants, name) == code


# Statuses only the oneDNN graph API returns (kiln uses the primitive API only).
GRAPH_ONLY_STATUSES = {"dnnl_invalid_graph", "dnnl_invalid_graph_op", "dnnl_invalid_shape",
                       "dnnl_invalid_data_type"}


def test_status_names_cover_every_primitive_api_status(preprocessed):
    body = re.search(r"typedef\s+enum\s*\{([^}]*)\}\s*dnnl_status_t\s*;", preprocessed).group(1)
    declared = {item.split("=")[0].strip() for item in body.split(",") if item.strip()}
    assert GRAPH_ONLY_STATUSES <= declared
    assert sorted("dnnl_" + name for name in constants.STATUS_NAMES.values()) == sorted(
        declared - GRAPH_ONLY_STATUSES)


def test_struct_layouts(header_values):
    assert ctypes.sizeof(library.exec_arg_t) == header_values["sizeof:exec_arg"]
    assert library.exec_arg_t.memory.offset == header_values["offsetof:exec_arg.memory"]
    assert ctypes.sizeof(library.version_t) == header_values["sizeof:version"]
    assert library.version_t.hash.offset == header_values["offsetof:version.hash"]
    assert library.version_t.cpu_runtime.offset == header_values["offsetof:version.cpu_runtime"]
    assert ctypes.sizeof(library.dim_t) == header_values["sizeof:dim"]
    assert len(library.dims_t()) == header_values["MAX_NDIMS"]


def test_library_version_is_3_2():
    version = library.lib.dnnl_version().contents
    assert (version.major, version.minor) == (3, 2)


# -- prototypes ------------------------------------------------------------------------------

def _split_top_level(text):
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return [] if parts == [""] or parts == ["void"] else parts


def _prototype(preprocessed, name):
    """(return type text, [parameter texts]) of `name` in the preprocessed header."""
    match = re.search(r"(?:^|[;}])\s*([^;{}]*?)\b" + re.escape(name) + r"\s*\(", preprocessed)
    assert match is not None, f"{name} is not declared in the oneDNN headers"
    start = match.end()
    depth = 1
    for index in range(start, len(preprocessed)):
        if preprocessed[index] == "(":
            depth += 1
        elif preprocessed[index] == ")":
            depth -= 1
            if depth == 0:
                break
    return_text = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", match.group(1))
    return " ".join(return_text.split()), _split_top_level(preprocessed[start:index])


def _type_kinds(preprocessed):
    pointers = set(re.findall(r"typedef\s+(?:const\s+)?struct\s+\w+\s*\*\s*(\w+)\s*;",
                              preprocessed))
    enums = set(re.findall(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", preprocessed))
    return pointers, enums


def _header_kind(text, pointers, enums):
    """Classify a C type (or a parameter declaration) into the kind ctypes must pass."""
    text = re.sub(r"\bconst\b", " ", text)
    if "*" in text or "[" in text:
        return "pointer"
    words = re.findall(r"\w+", text)
    if any(word in pointers for word in words) or "dnnl_dims_t" in words:
        return "pointer"  # opaque handles, and arrays (dnnl_dims_t) decay to pointers
    if "dnnl_dim_t" in words or "int64_t" in words:
        return "int64"
    if "size_t" in words:
        return "size_t"
    if "float" in words:
        return "float"
    if "char" in words:
        return "char"
    if ("unsigned" in words or "int" in words or "int32_t" in words
            or any(word in enums for word in words)):
        return "int32"
    raise AssertionError(f"unclassified C type {text!r}")


def _declared_return_names():
    """{function: name of the return-type expression} from library.py's source: `status_t` and
    `c_int` are the same ctypes class, so only the source tells which one was meant."""
    tree = ast.parse(open(library.__file__).read())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "DECLARATIONS"):
            return {key.value: ast.unparse(value.elts[0])
                    for key, value in zip(node.value.keys, node.value.values)}
    raise AssertionError("DECLARATIONS not found in kiln/binding/library.py")


def _ctypes_kind(ctype):
    if ctype in (ctypes.c_void_p, ctypes.c_char_p) or (
            isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer)):
        return "pointer"
    if ctype is ctypes.c_int64:
        return "int64"
    if ctype is ctypes.c_size_t:
        return "size_t"
    if ctype is ctypes.c_float:
        return "float"
    if ctype is ctypes.c_char:
        return "char"
    if ctype in (ctypes.c_int, ctypes.c_uint):
        return "int32"
    raise AssertionError(f"unclassified ctypes type {ctype!r}")


@pytest.mark.parametrize("name", sorted(library.DECLARATIONS))
def test_declaration_matches_prototype(name, preprocessed):
    restype, argtypes = library.DECLARATIONS[name]
    return_text, parameters = _prototype(preprocessed, name)
    pointers, enums = _type_kinds(preprocessed)
    assert len(argtypes) == len(parameters), (
        f"{name}: kiln declares {len(argtypes)} arguments, the header has {len(parameters)}: "
        f"{parameters}")
    returns_status = re.search(r"\bdnnl_status_t\b", return_text) is not None
    declared_return = _declared_return_names()[name]
    assert (declared_return == "status_t") == returns_status, (
        f"{name}: header returns {return_text!r}, kiln declares {declared_return}")
    if not returns_status:
        assert _ctypes_kind(restype) == _header_kind(return_text, pointers, enums), (
            f"{name}: header returns {return_text!r}, kiln declares {restype!r}")
    for position, (ctype, parameter) in enumerate(zip(argtypes, parameters)):
        assert _ctypes_kind(ctype) == _header_kind(parameter, pointers, enums), (
            f"{name} argument {position}: header {parameter!r}, kiln {ctype!r}")


def test_declarations_exist_in_library():
    for name in library.DECLARATIONS:
        assert hasattr(library.lib, name)
