"""`import acl` in the processes a script run by `npurt run` starts (multiprocessing's
'spawn' and 'forkserver' workers, `python` subprocesses): npurt's pyACL facade.

`npurt run` puts the directory holding this package on PYTHONPATH for its run only. Importing
it installs the same `acl` -> `npurt.acl` aliases as in the script itself and then stands
aside: the import statement returns npurt.acl.
"""
import sys

from npurt.apps.runner import install_acl_alias

install_acl_alias()
sys.modules[__name__] = sys.modules["npurt.acl"]
