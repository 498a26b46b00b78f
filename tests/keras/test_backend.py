import json

import pytest

from kiln.keras import backend


@pytest.fixture(autouse=True)
def keras_home(tmp_path, monkeypatch):
    """Points KERAS_HOME at an empty directory and forgets cached settings."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    backend._reset_for_tests()
    yield tmp_path
    backend._reset_for_tests()


def write_config(directory, content):
    path = directory / "keras.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_defaults_without_config_file():
    assert backend.image_data_format() == "channels_last"
    assert backend.epsilon() == 1e-7
    assert backend.floatx() == "float32"


def test_reads_keras_json_from_keras_home(keras_home):
    write_config(keras_home, {
        "image_data_format": "channels_first", "epsilon": 1e-5,
        "floatx": "float64", "backend": "tensorflow",  # unknown: ignored
    })
    assert backend.image_data_format() == "channels_first"
    assert backend.epsilon() == 1e-5
    assert backend.floatx() == "float64"


def test_reads_dot_keras_in_home_without_keras_home(tmp_path, monkeypatch):
    monkeypatch.delenv("KERAS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".keras").mkdir()
    write_config(tmp_path / ".keras", {"image_data_format": "channels_first"})
    assert backend.image_data_format() == "channels_first"


def test_config_is_read_lazily_and_once(keras_home):
    write_config(keras_home, {"epsilon": 0.01})
    assert backend.epsilon() == 0.01
    write_config(keras_home, {"epsilon": 0.5})
    assert backend.epsilon() == 0.01  # cached
    backend._reset_for_tests()
    assert backend.epsilon() == 0.5


def test_malformed_file_warns_and_uses_defaults(keras_home):
    path = write_config(keras_home, "{not json")
    with pytest.warns(UserWarning, match="Ignoring Keras config file") as rec:
        assert backend.image_data_format() == "channels_last"
    assert str(path) in str(rec[0].message)
    assert backend.epsilon() == 1e-7


def test_non_object_file_warns(keras_home):
    write_config(keras_home, "[1, 2]")
    with pytest.warns(UserWarning, match="expected a JSON object, got list"):
        assert backend.floatx() == "float32"


def test_invalid_values_warn_and_keep_defaults(keras_home):
    write_config(keras_home, {
        "image_data_format": "NHWC", "epsilon": -1, "floatx": "int8",
    })
    with pytest.warns(UserWarning) as records:
        assert backend.image_data_format() == "channels_last"
    messages = [str(r.message) for r in records]
    assert len(messages) == 3
    assert ("key 'image_data_format' must be 'channels_last' or "
            "'channels_first', got 'NHWC'; using the default "
            "'channels_last'") in messages[0]
    assert "key 'epsilon' must be a positive finite number" in messages[1]
    assert "key 'floatx' must be one of" in messages[2]
    assert backend.epsilon() == 1e-7
    assert backend.floatx() == "float32"


def test_set_image_data_format():
    backend.set_image_data_format("channels_first")
    assert backend.image_data_format() == "channels_first"
    backend.set_image_data_format("Channels_Last")  # case-insensitive
    assert backend.image_data_format() == "channels_last"


def test_setting_before_first_read_is_not_overwritten(keras_home):
    write_config(keras_home, {"image_data_format": "channels_first"})
    backend.set_image_data_format("channels_last")
    assert backend.image_data_format() == "channels_last"
    assert backend.epsilon() == 1e-7


def test_set_image_data_format_rejects_unknown_value():
    with pytest.raises(ValueError) as error:
        backend.set_image_data_format("xyz")
    assert str(error.value) == (
        "set_image_data_format: argument data_format must be "
        "'channels_last' or 'channels_first', got 'xyz'")
    assert backend.image_data_format() == "channels_last"


def test_set_epsilon_and_floatx():
    backend.set_epsilon(1e-3)
    assert backend.epsilon() == 1e-3
    with pytest.raises(ValueError, match="argument value must be a positive"):
        backend.set_epsilon(0)
    with pytest.raises(ValueError, match="got True"):
        backend.set_epsilon(True)
    backend.set_floatx("float16")
    assert backend.floatx() == "float16"
    with pytest.raises(ValueError, match="got 'int32'"):
        backend.set_floatx("int32")


def test_normalize_data_format():
    assert backend.normalize_data_format(None, "Conv2D 'c'") == "channels_last"
    backend.set_image_data_format("channels_first")
    assert backend.normalize_data_format(None, "Conv2D 'c'") == "channels_first"
    assert (backend.normalize_data_format("CHANNELS_LAST", "Conv2D 'c'")
            == "channels_last")
    with pytest.raises(ValueError) as error:
        backend.normalize_data_format("xyz", "Conv2D 'conv2d_1'")
    assert str(error.value) == (
        "Conv2D 'conv2d_1': argument data_format must be 'channels_last' "
        "or 'channels_first', got 'xyz'")


def test_clear_session_keeps_settings():
    backend.set_image_data_format("channels_first")
    assert backend.clear_session() is None
    assert backend.clear_session(free_memory=False) is None
    assert backend.image_data_format() == "channels_first"


def test_clear_session_restarts_layer_names():
    from kiln.keras.layers import Conv2D, Dense
    backend.clear_session()
    assert [Conv2D(2, 3).name, Conv2D(2, 3).name, Dense(2).name] == ["conv2d", "conv2d_1",
                                                                      "dense"]
    backend.clear_session()
    assert Conv2D(2, 3).name == "conv2d"
