"""The error model: one hierarchy carrying real aclError numbers, messages that say what to
do, and the per-thread last error (issue 2, scope 7)."""
from __future__ import annotations

import threading

import pytest

from npurt.runtime import constants as C
from npurt.runtime import errors as E


@pytest.fixture(autouse=True)
def _clean_last_error():
    E.get_last_error()
    E.get_recent_err_msg()
    yield
    E.get_last_error()
    E.get_recent_err_msg()


@pytest.mark.parametrize("cls, code", [
    (E.InvalidValueError, 100000),
    (E.NotInitializedError, 100001),
    (E.InvalidDeviceError, 107001),
    (E.ContextError, 107002),
    (E.InvalidHandleError, 107017),
    (E.AddressUnalignedError, 107008),
    (E.OutOfMemoryError, 207001),
    (E.ResourceExhaustedError, 207008),
    (E.FeatureNotSupportedError, 207000),
    (E.SyncTimeoutError, 507046),
    (E.StreamAbortedError, 107023),
    (E.EventError, 107006),
    (E.SubscriptionError, 107015),
    (E.TaskError, 507015),
])
def test_each_error_class_carries_its_real_acl_error_number(cls, code):
    assert cls.code == code
    assert cls("x").code == code
    assert issubclass(cls, E.NpuError)


def test_real_error_code_values():
    assert C.ACL_SUCCESS == 0
    assert C.ACL_ERROR_INVALID_PARAM == 100000
    assert C.ACL_ERROR_RT_MEMORY_ALLOCATION == 207001
    assert C.ACL_ERROR_RT_NO_STREAM_RESOURCE == 207008
    assert C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT == 507046
    assert C.ACL_ERROR_RT_EVENT_SYNC_TIMEOUT == 507047
    assert C.ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED == 507910
    assert C.ACL_ERROR_HOST_MEMORY_NOT_REGISTERED == 507911


def test_an_explicit_code_overrides_the_class_code():
    err = E.SyncTimeoutError("late", C.ACL_ERROR_RT_EVENT_SYNC_TIMEOUT)
    assert err.code == 507047
    assert isinstance(err, TimeoutError)


def test_message_shows_the_text_the_code_name_and_the_number():
    err = E.InvalidValueError("size must be positive")
    assert str(err) == "size must be positive [ACL_ERROR_INVALID_PARAM 100000]"
    assert err.message == "size must be positive"


def test_error_name_of_known_and_unknown_codes():
    assert E.error_name(107001) == "ACL_ERROR_RT_INVALID_DEVICEID"
    assert E.error_name(0) == "ACL_SUCCESS"
    assert E.error_name(123456789) == "aclError 123456789"


def test_errors_are_also_the_matching_python_exceptions():
    assert issubclass(E.InvalidValueError, ValueError)
    assert issubclass(E.SyncTimeoutError, TimeoutError)
    assert issubclass(E.FeatureNotSupportedError, NotImplementedError)
    assert not issubclass(E.OutOfMemoryError, MemoryError)  # never a Python MemoryError


def test_task_error_keeps_the_task_description():
    err = E.TaskError("boom", 507018, task_info="stream 3 task #7")
    assert err.code == 507018 and err.task_info == "stream 3 task #7"


# ---------------------------------------------------------------- last error
def test_get_last_error_returns_and_clears():
    E.set_last_error(E.InvalidDeviceError("device 9 is invalid"))
    assert E.get_last_error() == 107001
    assert E.get_last_error() == 0


def test_peek_does_not_clear():
    E.set_last_error(E.OutOfMemoryError("full"))
    assert E.get_last_error(clear=False) == 207001
    assert E.get_last_error(clear=False) == 207001
    assert E.get_last_error() == 207001
    assert E.get_last_error(clear=False) == 0


def test_the_latest_error_wins():
    E.set_last_error(E.InvalidValueError("first"))
    E.set_last_error(E.ContextError("second"))
    assert E.get_last_error() == 107002
    assert "second" in E.get_recent_err_msg()


def test_recent_error_message_returns_the_text_and_clears():
    E.set_last_error(E.InvalidValueError("count (5) is larger than dest_max (4)"))
    msg = E.get_recent_err_msg()
    assert "count (5) is larger than dest_max (4)" in msg
    assert "100000" in msg
    assert E.get_recent_err_msg() == ""


def test_last_error_is_per_thread():
    E.set_last_error(E.InvalidValueError("main thread's"))
    seen = []

    def other():
        seen.append(E.get_last_error(clear=False))
        E.set_last_error(E.OutOfMemoryError("other thread's"))
        seen.append(E.get_last_error())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [0, 207001]
    assert E.get_last_error() == 100000


def test_runtime_errors_say_what_to_do(rt):
    """A sample of real failures: each message names the problem and a way out."""
    cases = []
    for bad in (lambda: rt.set_device(5), lambda: rt.malloc(0), lambda: rt.free(rt.malloc(64) + 64)):
        with pytest.raises(E.NpuError) as info:
            bad()
        cases.append(str(info.value))
    assert "ids 0..1" in cases[0]
    assert "positive" in cases[1]
    assert "pass the start address" in cases[2]
