"""Device memory shared by the processes of one host: the HBM of a simulated NPU in /dev/shm.

On hardware every process that opens device N uses the same HBM, and an allocation has the
same device address in each process that imports it. The shared arena gives the simulated NPU
that: the device's memory is one sparse file in shared memory (`/dev/shm/npurt-<uid>-<namespace>/
hbm<N>`, sized to the capacity, so pages cost RAM only once touched), mapped MAP_SHARED by every
process of the namespace at the same device addresses.

Who owns which memory is a table in a second shared file (`hbm<N>.ctl`):

    header   magic, layout version, capacity, usable bytes, chunk size, chunk count, the arena's
             address slot (so va_base is equal in every process)
    slots    one row per attached process: pid, its start time (a reused pid is not the same
             process), the bytes it has committed
    chunks   per 2 MiB chunk of the usable memory: 0 (free), the owner's slot + 1, or -1 (an
             orphan: its owner died while another process held an IPC import of it)

A process claims coarse chunks from the table (under an flock(2) of the control file) and runs
its own page allocator inside them, so malloc and free stay process-local: the caching pool
above reaches the table only when it maps a segment its claimed chunks cannot hold, or unmaps
one while the process holds more than `reserve` free bytes (64 MiB, or 1/64 of a small
device): then whole chunks the free leaves empty go back to the table at once.

Lifetime: attaching takes a slot; a process that closes its device (finalize, exit) punches its
chunks' pages out of the file and frees them; slots of processes that died (kill -9) are
reclaimed the same way by whoever next takes the lock (except memory a live process still
imports through IPC, freed once that import is closed: ipc.py); the last process out removes the files
and the directory. An attach that races with a last-out removal finds its file unlinked (the
inode behind the path changed) and retries, so no process maps a removed object. A process
that ends without detaching (os._exit, a signal) is cleaned up after by the next process of the
user that attaches any shared device (`sweep_abandoned`), so no namespace's objects outlive
all of its processes for longer than that.
"""
from __future__ import annotations

import atexit
import bisect
import ctypes
import fcntl
import mmap
import os
import re
import weakref

import numpy as np

from .ipc import IpcRegistry
from .processes import alive, me
from .hbm import HUGE_PAGE, PAGE_KINDS, PAGE_SIZE, PageAllocator, _mincore, align_up

CHUNK = HUGE_PAGE          # the unit processes claim memory in
MAGIC = 0x4E50555254484D31  # "NPURTHM1"
LAYOUT_VERSION = 1
MAX_SLOTS = 128            # processes attached to one device at once
RESERVE = 64 << 20         # at most this much free memory stays claimed by a process
ORPHAN = -1                # a chunk of a dead process that a live import still holds
_HEADER_WORDS = 16
_SLOT_WORDS = 4            # pid, start time, committed bytes, (spare)
_H_MAGIC, _H_VERSION, _H_CAPACITY, _H_USABLE, _H_CHUNK, _H_CHUNKS, _H_VA_SLOT = range(7)

NAMESPACE_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class SharedDeviceError(OSError):
    """The shared device cannot be attached (a mismatch with the processes already on it,
    or every slot taken)."""


def shm_root() -> str:
    """Where the shared objects live: /dev/shm (tmpfs), else the temporary directory."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else os.environ.get("TMPDIR", "/tmp")


def namespace_dir(namespace: str) -> str:
    """The directory of one namespace's shared devices (per user: others cannot join)."""
    if not NAMESPACE_PATTERN.fullmatch(namespace):
        raise ValueError(f"device namespace {namespace!r}: use 1-64 letters, digits, '_', '.' or '-'")
    return os.path.join(shm_root(), f"npurt-{os.getuid()}-{namespace}")


class SharedHbmArena(PageAllocator):
    """The HBM of one device, shared with the other processes of a namespace; the same face as
    `HbmArena` (map_pages / unmap_pages / release_all / mem / accounting), with accounting that
    covers every process on the device."""

    def __init__(self, directory: str, physical_id: int, capacity: int, system_reserved: int, va_slot: int):
        super().__init__(capacity - system_reserved)
        self._free_starts, self._free_sizes = [], {}   # nothing is ours until claimed
        if os.getpid() not in _SWEPT:  # once per process: what processes that vanished left behind
            _SWEPT.add(os.getpid())
            sweep_abandoned(os.path.dirname(directory))
        self.directory = directory
        self.physical_id = physical_id
        self.registry = IpcRegistry(directory)
        self.capacity = capacity
        self.path = os.path.join(directory, f"hbm{physical_id}")
        self.ctl_path = self.path + ".ctl"
        self.n_chunks = self.usable // CHUNK
        # free memory this process keeps claimed (a cache emptied and filled again takes no
        # lock); beyond it, chunks a free leaves empty go back to the device at once
        self.reserve = min(RESERVE, self.usable // 64 // CHUNK * CHUNK)
        self._pid = os.getpid()
        self._fd = self._attach_control()
        try:
            self._init_or_check(capacity, va_slot)
            hbm_fd = os.open(self.path, os.O_RDWR)
            try:
                self._mm = mmap.mmap(hbm_fd, capacity, flags=mmap.MAP_SHARED,
                                     prot=mmap.PROT_READ | mmap.PROT_WRITE)
            finally:
                os.close(hbm_fd)
            self.va_slot = int(self._header[_H_VA_SLOT])
            self.slot = self._take_slot()
        except BaseException:
            # a device nobody is attached to (we may have just made it) goes again, so that a
            # failed start (ulimit -v, a full slot table) leaves nothing in /dev/shm
            slots = getattr(self, "_slots", None)
            if slots is not None and not slots[:, 0].any():
                self._remove_files()
            os.close(self._fd)  # (closing drops the lock)
            raise
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.mem = np.frombuffer(self._mm, dtype=np.uint8)
        self.host_address = self.mem.ctypes.data
        self.closed = False
        _OPEN.add(self)

    # ------------------------------------------------------------ attach / detach
    def _attach_control(self) -> int:
        """Open and lock the control file, retrying while a last-out process removes it."""
        while True:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            try:
                fd = os.open(self.ctl_path, os.O_RDWR | os.O_CREAT, 0o600)
            except FileNotFoundError:  # the directory went away between makedirs and open
                continue
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(self.ctl_path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)  # we locked a file the last process out had already unlinked

    def _layout_size(self) -> int:
        return (_HEADER_WORDS + MAX_SLOTS * _SLOT_WORDS) * 8 + align_up(self.n_chunks * 2, 8)

    def _init_or_check(self, capacity: int, va_slot: int) -> None:
        """(Control file locked.) Create the device if this process is the first, else check
        that it simulates the same memory as the processes already on it."""
        size = self._layout_size()
        fresh = not self._has_header()
        if fresh:
            os.ftruncate(self._fd, 0)   # a creator that died half-way left garbage: start over
            os.ftruncate(self._fd, size)
            hbm_fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.ftruncate(hbm_fd, capacity)
            finally:
                os.close(hbm_fd)
        else:
            self._check_header(capacity)
        self._ctl = mmap.mmap(self._fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        words = np.frombuffer(self._ctl, dtype=np.int64, count=_HEADER_WORDS + MAX_SLOTS * _SLOT_WORDS)
        self._header = words[:_HEADER_WORDS]
        self._slots = words[_HEADER_WORDS:].reshape(MAX_SLOTS, _SLOT_WORDS)
        self._chunks = np.frombuffer(self._ctl, dtype=np.int16, count=self.n_chunks,
                                     offset=(_HEADER_WORDS + MAX_SLOTS * _SLOT_WORDS) * 8)
        h = self._header
        if fresh:
            h[_H_VERSION], h[_H_CAPACITY], h[_H_USABLE] = LAYOUT_VERSION, capacity, self.usable
            h[_H_CHUNK], h[_H_CHUNKS], h[_H_VA_SLOT] = CHUNK, self.n_chunks, va_slot
            h[_H_MAGIC] = MAGIC  # last: a half-made header is not taken for a device

    def _has_header(self) -> bool:
        header = os.pread(self._fd, _HEADER_WORDS * 8, 0)
        return len(header) == _HEADER_WORDS * 8 and np.frombuffer(header, np.int64)[_H_MAGIC] == MAGIC

    def _check_header(self, capacity: int) -> None:
        h = np.frombuffer(os.pread(self._fd, _HEADER_WORDS * 8, 0), np.int64)
        if (h[_H_VERSION], h[_H_CAPACITY], h[_H_USABLE], h[_H_CHUNKS]) != (
                LAYOUT_VERSION, capacity, self.usable, self.n_chunks):
            raise SharedDeviceError(
                f"shared device {self.path}: its processes simulate {int(h[_H_CAPACITY]) >> 20} MiB "
                f"({int(h[_H_USABLE]) >> 20} MiB usable), this one {capacity >> 20} MiB ({self.usable >> 20} MiB): "
                "use the same NPURT_SOC and NPURT_HBM_SIZE, another NPURT_DEVICE_NAMESPACE, or "
                "NPURT_SHARED_DEVICES=0 for a private device")

    def _take_slot(self) -> int:
        self._reclaim_dead()
        free = np.flatnonzero(self._slots[:, 0] == 0)
        if not len(free):
            raise SharedDeviceError(f"shared device {self.path}: {MAX_SLOTS} processes are attached already")
        slot = int(free[0])
        self._slots[slot, 1] = me()[1]
        self._slots[slot, 2] = 0
        self._slots[slot, 0] = self._pid
        return slot

    def _reclaim_dead(self) -> int:
        """(Control file locked.) Free the chunks of attached processes that died, except those
        a live import still holds (they become orphans, freed once nobody holds them); how many
        slots were reclaimed."""
        dead = [int(slot) for slot in np.flatnonzero(self._slots[:, 0])
                if not alive(self._slots[slot, :2].tolist())]
        orphans = (self._chunks == ORPHAN).any()
        if not dead and not orphans:
            return 0
        held = self._held_chunks()
        for slot in dead:
            self._chunks[(self._chunks == slot + 1) & held] = ORPHAN
            self._release_chunks_of(slot)
            self._slots[slot] = 0
        loose = (self._chunks == ORPHAN) & ~held
        if loose.any():
            self._release_where(loose)
        return len(dead)

    def reclaim(self) -> None:
        """Free what dead processes and closed imports no longer hold (an importer closed)."""
        with self._lock:
            self._lock_ctl()
            try:
                self._reclaim_dead()
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _release_chunks_of(self, slot: int) -> None:
        """(Control file locked.) Punch a slot's chunks out of the file and free them."""
        self._release_where(self._chunks == slot + 1)

    def _release_own(self) -> None:
        """(Control file locked.) Free this process's chunks, except those another live
        process imports (they become orphans until that import is closed)."""
        mine = self._chunks == self.slot + 1
        if not mine.any():
            return
        held = self._held_chunks()
        self._chunks[mine & held] = ORPHAN
        self._release_chunks_of(self.slot)

    def _held_chunks(self):
        held = np.zeros(self.n_chunks, dtype=bool)
        for record in self.registry.sweep(self.physical_id):
            if record["kind"] == "mem" and any(alive(w) for w in record["importers"]):
                first = record["offset"] // CHUNK
                held[first:-(-(record["offset"] + record["size"]) // CHUNK)] = True
        return held

    def _release_where(self, mask) -> None:
        if not mask.any():
            return
        edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.view(np.int8), [0]))))
        for start, end in zip(edges[::2], edges[1::2]):
            self._punch(int(start) * CHUNK, int(end - start) * CHUNK)
        self._chunks[mask] = 0

    def _punch(self, offset: int, size: int) -> None:
        """Give pages back to the OS: in a shared file that means removing them from the file
        (MADV_DONTNEED would only drop this process's mapping of them)."""
        self._mm.madvise(mmap.MADV_REMOVE, offset, size)

    def close(self) -> None:
        """Detach: free this process's chunks and slot; the last process out removes the files."""
        if self.closed or os.getpid() != self._pid:  # a forked child does not own the parent's slot
            return
        with self._lock:
            self.closed = True
            self._lock_ctl()
            try:
                self._release_own()
                self._slots[self.slot] = 0
                self._reclaim_dead()
                last = not self._slots[:, 0].any()
                if last:
                    self._remove_files()
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
        _OPEN.discard(self)

    def _remove_files(self) -> None:
        """(Control file locked, no process attached.) Remove the device's objects, and the
        namespace's directory if no other device is left in it."""
        self.registry.remove_all(self.physical_id)
        for path in (self.path, self.ctl_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        try:
            os.rmdir(self.directory)
        except OSError:  # other devices of the namespace are still in use
            pass

    def _lock_ctl(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    # ------------------------------------------------------------ page allocation
    def map_pages(self, size: int, page: int) -> int | None:
        """Reserve `size` bytes (rounded up to `page`) aligned to `page`: from chunks this
        process holds, else from chunks it claims now; the offset, or None when the device is
        full."""
        size = align_up(size, page)
        with self._lock:
            offset = self._take_local(size, page)
            if offset is None and self._claim(size, page):
                offset = self._take_local(size, page)
            if offset is not None:
                self.committed[PAGE_KINDS[page]] += size
                self._slots[self.slot, 2] = sum(self.committed.values())
            return offset

    def _take_local(self, size: int, page: int) -> int | None:
        for start in self._free_starts:
            free = self._free_sizes[start]
            offset = align_up(start, page)
            if offset + size <= start + free:
                self._take(start, free, offset, size)
                return offset
        return None

    def _claim(self, size: int, page: int) -> bool:
        """Claim a run of free chunks large enough for `size` at `page` alignment."""
        count = -(-size // CHUNK)
        step = max(page // CHUNK, 1)
        self._lock_ctl()
        try:
            start = self._find_run(count, step)
            if start is None and self._reclaim_dead():
                start = self._find_run(count, step)
            if start is None:
                return False
            self._chunks[start:start + count] = self.slot + 1
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._give(start * CHUNK, count * CHUNK)  # merges with a free neighbour we hold
        return True

    def _find_run(self, count: int, step: int) -> int | None:
        if count == 1 and step == 1:  # the common case: the first free chunk
            first = int(np.argmin(self._chunks != 0))
            return first if self._chunks[first] == 0 else None
        free = np.concatenate(([0], np.cumsum(self._chunks == 0)))
        runs = free[count:] - free[:-count] if count <= self.n_chunks else np.zeros(0, np.int64)
        fits = np.flatnonzero(runs[::step] == count) * step
        return int(fits[0]) if len(fits) else None

    def unmap_pages(self, offset: int, size: int, page: int) -> None:
        """Give a range back: its pages leave the file, and chunks left wholly free go back to
        the device's table."""
        size = align_up(size, page)
        self._mm.madvise(mmap.MADV_REMOVE, offset, size)
        with self._lock:
            self.committed[PAGE_KINDS[page]] -= size
            self._slots[self.slot, 2] = sum(self.committed.values())
            self._give(offset, size)
            if sum(self._free_sizes.values()) > self.reserve:
                self._return_empty_chunks(offset)

    def _return_empty_chunks(self, offset: int) -> None:
        """(Local lock held.) Cut the whole chunks out of the free range holding `offset` and
        hand them back to the device's table."""
        i = bisect.bisect_right(self._free_starts, offset) - 1
        start = self._free_starts[i]
        end = start + self._free_sizes[start]
        first, last = -(-start // CHUNK), end // CHUNK
        if last <= first:
            return
        del self._free_starts[i]
        del self._free_sizes[start]
        if first * CHUNK > start:
            self._insert(start, first * CHUNK - start)
        if end > last * CHUNK:
            self._insert(last * CHUNK, end - last * CHUNK)
        self._lock_ctl()
        try:
            self._chunks[first:last] = 0
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def release_all(self) -> None:
        """Device reset in this process: its memory goes back; the other processes' stays."""
        with self._lock:
            self._lock_ctl()
            try:
                self._release_own()
                self._slots[self.slot, 2] = 0
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            self._free_starts, self._free_sizes = [], {}
            self.committed = {kind: 0 for kind in PAGE_KINDS.values()}

    reset = release_all

    # ------------------------------------------------------------ accounting (the whole device)
    @property
    def committed_bytes(self) -> int:
        return int(self._slots[:, 2].sum())

    @property
    def own_committed_bytes(self) -> int:
        return sum(self.committed.values())

    @property
    def free_bytes(self) -> int:
        return self.usable - self.committed_bytes

    def largest_free(self, page: int) -> int:
        local = PageAllocator.largest_free(self, page)
        free = np.concatenate(([False], self._chunks == 0, [False])).view(np.int8)
        edges = np.flatnonzero(np.diff(free))
        best = 0
        step = max(page // CHUNK, 1)
        for start, end in zip(edges[::2], edges[1::2]):
            aligned = -(-int(start) // step) * step
            best = max(best, (int(end) - aligned) * CHUNK // page * page)
        return max(local, best)

    def attached_pids(self) -> list[int]:
        """Pids of the processes attached to this device now (this one included)."""
        return [int(p) for p in self._slots[:, 0] if p]

    def resident_bytes(self) -> int:
        """RAM the kernel backs the device's file with now (every process's pages)."""
        vec = np.zeros(self.capacity // PAGE_SIZE, dtype=np.uint8)
        if _mincore(self.host_address, self.capacity, vec.ctypes.data) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed on the device memory arena")
        return int(np.count_nonzero(vec & 1)) * PAGE_SIZE


_OPEN: "weakref.WeakSet[SharedHbmArena]" = weakref.WeakSet()
_SWEPT: set[int] = set()   # pids (this process, or a forked child) that swept already


def sweep_abandoned(root: str) -> None:
    """Remove the shared devices of this user whose processes are all gone: a process that
    ends without detaching (os._exit, a signal) leaves its device behind, and a namespace no
    process opens again (a test run's) would keep it forever. A device another process is
    attaching or detaching right now (its control file is locked) is left for later."""
    prefix = f"npurt-{os.getuid()}-"
    try:
        names = [n for n in os.listdir(root) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        directory = os.path.join(root, name)
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            if entry.startswith("hbm") and entry.endswith(".ctl"):
                _remove_if_abandoned(directory, os.path.join(directory, entry))
        try:
            os.rmdir(directory)  # only once empty: a device still in use keeps it
        except OSError:
            pass


def _remove_if_abandoned(directory: str, ctl_path: str) -> None:
    try:
        fd = os.open(ctl_path, os.O_RDWR)
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # someone is attaching or detaching: not abandoned
            return
        try:
            if os.stat(ctl_path).st_ino != os.fstat(fd).st_ino:
                return
        except FileNotFoundError:
            return
        raw = os.pread(fd, (_HEADER_WORDS + MAX_SLOTS * _SLOT_WORDS) * 8, 0)
        if len(raw) == (_HEADER_WORDS + MAX_SLOTS * _SLOT_WORDS) * 8:
            words = np.frombuffer(raw, np.int64)
            slots = words[_HEADER_WORDS:].reshape(MAX_SLOTS, _SLOT_WORDS)
            if any(alive(slots[i, :2].tolist()) for i in np.flatnonzero(slots[:, 0])):
                return
        elif raw:  # a control file of another layout: not ours to judge
            return
        physical = os.path.basename(ctl_path)[3:-4]
        if physical.isdigit():
            IpcRegistry(directory).remove_all(int(physical))
        for path in (ctl_path[:-4], ctl_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    finally:
        os.close(fd)


@atexit.register
def detach_all() -> None:
    """At exit, detach from every shared device still attached (a killed process is reclaimed
    by the others instead). A C program's interpreter never finalizes: its exit hook calls this."""
    for arena in list(_OPEN):
        try:
            arena.close()
        except OSError:
            pass
