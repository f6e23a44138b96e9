"""Floor 6, the processes: the programs a user starts, above every other layer.

    cli.py            the `npurt` command (also `python -m npurt`)
    runner.py         `npurt run`: a script, `-m module` or `-c code` with `acl` / `torch_npu` aliases
    acl_path/         the `acl` shim package that `npurt run` puts on PYTHONPATH
    launcher.py       `npurt launch -n N`: a script as N ranks connected by MPI
    demo.py, demo_bugs.py   `npurt demo`
    bench/            `npurt bench`
    pytest_plugin.py  the pytest plugin (pytest11 entry point `npurt.pytest_plugin`)

These modules may import anything below them; nothing in npurt imports them except the old
import paths kept as aliases at the package root (`npurt.cli`, `npurt.demo`, `npurt.bench`,
`npurt.pytest_plugin`), which count as this floor too.
"""
