"""Hello, NPU: the lifecycle of every pyACL program.

init -> set_device -> create_context -> create_stream -> (work) -> destroy_stream ->
destroy_context -> reset_device -> finalize, checking every return code.

Run on npurt's simulated NPU with:  npurt run examples/pyacl/hello.py
"""
import acl

ACL_SUCCESS = 0
DEVICE_ID = 0


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def main():
    check("acl.init", acl.init())
    count, ret = acl.rt.get_device_count()
    check("get_device_count", ret)
    print(f"devices: {count}, soc: {acl.get_soc_name()}")

    check("set_device", acl.rt.set_device(DEVICE_ID))
    context, ret = acl.rt.create_context(DEVICE_ID)
    check("create_context", ret)
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)
    run_mode, ret = acl.rt.get_run_mode()
    check("get_run_mode", ret)
    device, ret = acl.rt.get_device()
    check("get_device", ret)
    print(f"device {device} ready, run mode {run_mode} ({'host' if run_mode == 1 else 'device'})")

    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("destroy_context", acl.rt.destroy_context(context))
    check("reset_device", acl.rt.reset_device(DEVICE_ID))
    check("acl.finalize", acl.finalize())
    print("hello: teardown complete")


if __name__ == "__main__":
    main()
