"""TDT channels and queues (acl_tdt.h, acl_tdt_queue.h) on simulated host-device queues.

A channel (acltdtCreateChannel[WithCapacity], per device and name) carries datasets of tensor
items between the host and the device side; npurt's device side is this process, so a
channel is a bounded FIFO that both ends use. acltdtSendTensor copies the items' data (the
caller's buffers may be reused at once); acltdtReceiveTensor appends items to the dataset
whose data npurt owns until acltdtDestroyDataItem. A full channel refuses a send with
ACL_ERROR_RT_QUEUE_FULL after `timeout` ms (0: at once, -1: waits), an empty one a receive
with ACL_ERROR_RT_QUEUE_EMPTY. Queues (acltdtCreateQueue, ids from 1) hold buffers
(acltdtAllocBuf) or data (acltdtEnqueueData); a bound route (acltdtBindQueueRoutes) moves
what is enqueued on its source queue to its destination queue.
"""
from __future__ import annotations

import threading
from collections import deque

from ...runtime import InvalidValueError, NpuError, constants as C
from .. import cdata
from ..cdata import Opaque
from ..registry import c_function
from ._common import null

V = cdata.enum_values()
DEFAULT_CAPACITY = 128

_items, _datasets, _channels = Opaque("acltdtDataItem"), Opaque("acltdtDataset"), Opaque("acltdtChannelHandle")
_attrs, _routes, _lists = Opaque("acltdtQueueAttr"), Opaque("acltdtQueueRoute"), Opaque("acltdtQueueRouteList")
_queries, _bufs = Opaque("acltdtQueueRouteQueryInfo"), Opaque("acltdtBuf")


class Item:
    __slots__ = ("tensor_type", "dims", "data_type", "data", "size", "owned")

    def __init__(self, tensor_type, dims, data_type, data, size, owned=None):
        self.tensor_type, self.dims, self.data_type = tensor_type, list(dims), data_type
        self.data, self.size, self.owned = data, size, owned


class Dataset:
    def __init__(self):
        self.items: list[int] = []   # item handles
        self.name = 0


class Fifo:
    """A bounded FIFO with timeouts in ms (-1: wait, 0: at once)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.items: deque = deque()
        self.cond = threading.Condition()
        self.stopped = False

    def _wait(self, ready, timeout_ms: int) -> bool:
        if timeout_ms < 0:
            self.cond.wait_for(lambda: ready() or self.stopped)
        elif timeout_ms > 0:
            self.cond.wait_for(lambda: ready() or self.stopped, timeout_ms / 1000)
        return ready()

    def put(self, obj, timeout_ms: int, what: str) -> None:
        with self.cond:
            if not self._wait(lambda: len(self.items) < self.capacity, timeout_ms):
                raise NpuError(f"{what} is full ({self.capacity} entries)", C.ACL_ERROR_RT_QUEUE_FULL)
            self.items.append(obj)
            self.cond.notify_all()

    def get(self, timeout_ms: int, what: str):
        with self.cond:
            if not self._wait(lambda: bool(self.items), timeout_ms):
                raise NpuError(f"{what} is empty", C.ACL_ERROR_RT_QUEUE_EMPTY)
            obj = self.items.popleft()
            self.cond.notify_all()
            return obj


# ---------------------------------------------------------------- items and datasets
@c_function("acltdtCreateDataItem")
def acltdtCreateDataItem(tdtType, dims, dimNum, dataType, data, size):
    shape = list(dims[0:dimNum]) if dimNum else []
    return _items.new(Item(tdtType, shape, dataType, data, size))


@c_function("acltdtDestroyDataItem")
def acltdtDestroyDataItem(dataItem):
    _items.free(dataItem, "dataItem")
    return 0


@c_function("acltdtCreateDataset")
def acltdtCreateDataset():
    return _datasets.new(Dataset())


@c_function("acltdtDestroyDataset")
def acltdtDestroyDataset(dataset):
    _datasets.free(dataset, "dataset")
    return 0


@c_function("acltdtAddDataItem")
def acltdtAddDataItem(dataset, dataItem):
    ds = _datasets.get(dataset, "dataset")
    _items.get(dataItem, "dataItem")
    ds.items.append(dataItem)
    return 0


@c_function("acltdtGetDataItem")
def acltdtGetDataItem(dataset, index):
    ds = _datasets.get(dataset, "dataset")
    if index >= len(ds.items):
        raise InvalidValueError(f"index {index} is past the dataset's {len(ds.items)} items")
    return ds.items[index]


@c_function("acltdtGetDatasetSize")
def acltdtGetDatasetSize(dataset):
    return len(_datasets.get(dataset, "dataset").items)


@c_function("acltdtGetDatasetName")
def acltdtGetDatasetName(dataset):
    return _datasets.get(dataset, "dataset").name


def _item(dataItem) -> Item:
    return _items.get(dataItem, "dataItem")


@c_function("acltdtGetTensorTypeFromItem")
def acltdtGetTensorTypeFromItem(dataItem):
    return _item(dataItem).tensor_type


@c_function("acltdtGetDataTypeFromItem")
def acltdtGetDataTypeFromItem(dataItem):
    return _item(dataItem).data_type


@c_function("acltdtGetDataAddrFromItem")
def acltdtGetDataAddrFromItem(dataItem):
    return _item(dataItem).data


@c_function("acltdtGetDataSizeFromItem")
def acltdtGetDataSizeFromItem(dataItem):
    return _item(dataItem).size


@c_function("acltdtGetDimNumFromItem")
def acltdtGetDimNumFromItem(dataItem):
    return len(_item(dataItem).dims)


@c_function("acltdtGetDimsFromItem")
def acltdtGetDimsFromItem(dataItem, dims, dimNum):
    item = _item(dataItem)
    if not dims:
        raise null("dims")
    if dimNum < len(item.dims):
        raise InvalidValueError(f"dimNum ({dimNum}) is smaller than the item's {len(item.dims)} dims")
    for i, d in enumerate(item.dims):
        dims[i] = d
    return 0


@c_function("acltdtGetSliceInfoFromItem")
def acltdtGetSliceInfoFromItem(dataItem, sliceNum, sliceId):
    """A tensor is sent whole: one slice, id 0."""
    _item(dataItem)
    if not sliceNum:
        raise null("sliceNum")
    if not sliceId:
        raise null("sliceId")
    sliceNum[0], sliceId[0] = 0, 0
    return 0


# ---------------------------------------------------------------- channels
class Channel(Fifo):
    def __init__(self, device_id: int, name: str, capacity: int):
        super().__init__(capacity)
        self.device_id, self.name = device_id, name


_named: dict[tuple[int, str], int] = {}


def _create_channel(deviceId, name, capacity):
    text = cdata.string(name)
    if not text:
        raise null("name")
    if capacity <= 0:
        raise InvalidValueError(f"capacity must be positive, got {capacity}")
    if (deviceId, text) in _named:
        raise InvalidValueError(f"a channel named {text!r} already exists on device {deviceId}")
    handle = _channels.new(Channel(deviceId, text, capacity))
    _named[(deviceId, text)] = handle
    return handle


@c_function("acltdtCreateChannel")
def acltdtCreateChannel(deviceId, name):
    return _create_channel(deviceId, name, DEFAULT_CAPACITY)


@c_function("acltdtCreateChannelWithCapacity")
def acltdtCreateChannelWithCapacity(deviceId, name, capacity):
    return _create_channel(deviceId, name, capacity)


def _channel(handle) -> Channel:
    return _channels.get(handle, "handle")


@c_function("acltdtDestroyChannel")
def acltdtDestroyChannel(handle):
    ch = _channels.free(handle, "handle")
    _named.pop((ch.device_id, ch.name), None)
    with ch.cond:
        ch.stopped = True
        ch.cond.notify_all()
    return 0


@c_function("acltdtStopChannel")
def acltdtStopChannel(handle):
    ch = _channel(handle)
    with ch.cond:
        ch.stopped = True
        ch.cond.notify_all()
    return 0


@c_function("acltdtCleanChannel")
def acltdtCleanChannel(handle):
    ch = _channel(handle)
    with ch.cond:
        ch.items.clear()
        ch.cond.notify_all()
    return 0


@c_function("acltdtQueryChannelSize")
def acltdtQueryChannelSize(handle, size):
    if not size:
        raise null("size")
    size[0] = len(_channel(handle).items)
    return 0


@c_function("acltdtSendTensor")
def acltdtSendTensor(handle, dataset, timeout):
    ch = _channel(handle)
    ds = _datasets.get(dataset, "dataset")
    message = []
    for h in ds.items:
        item = _item(h)
        data = cdata.read(item.data, item.size) if item.size else b""
        message.append((item.tensor_type, item.dims, item.data_type, data))
    ch.put(message, timeout, f"channel {ch.name!r}")
    return 0


@c_function("acltdtReceiveTensor")
def acltdtReceiveTensor(handle, dataset, timeout):
    ch = _channel(handle)
    ds = _datasets.get(dataset, "dataset")
    message = ch.get(timeout, f"channel {ch.name!r}")
    for tensor_type, dims, data_type, data in message:
        buf = cdata.ffi.new("char[]", max(len(data), 1))
        cdata.ffi.memmove(buf, data, len(data))
        addr = int(cdata.ffi.cast("uintptr_t", buf))
        ds.items.append(_items.new(Item(tensor_type, dims, data_type, addr, len(data), owned=buf)))
    return 0


# ---------------------------------------------------------------- queue attributes and queues
class QueueAttr:
    def __init__(self):
        self.name_ptr = 0
        self.depth = 8


def _param_read(param, length) -> int:
    if not param:
        raise null("param")
    if length not in (1, 2, 4, 8):
        raise InvalidValueError(f"len {length} is not the size of an integer or pointer parameter")
    return int.from_bytes(cdata.read(param, length), "little", signed=False)


def _param_write(param, length, paramRetSize, value: int, size: int) -> int:
    if not param:
        raise null("param")
    if length < size:
        raise InvalidValueError(f"len {length} is smaller than the parameter ({size} bytes)")
    cdata.write(param, value.to_bytes(size, "little", signed=value < 0))
    if paramRetSize:
        paramRetSize[0] = size
    return 0


@c_function("acltdtCreateQueueAttr")
def acltdtCreateQueueAttr():
    return _attrs.new(QueueAttr())


@c_function("acltdtDestroyQueueAttr")
def acltdtDestroyQueueAttr(attr):
    _attrs.free(attr, "attr")
    return 0


@c_function("acltdtSetQueueAttr")
def acltdtSetQueueAttr(attr, type, len, param):  # noqa: A002 - the C parameter names
    a = _attrs.get(attr, "attr")
    value = _param_read(param, len)
    if type == V["ACL_TDT_QUEUE_NAME_PTR"]:
        a.name_ptr = value
    elif type == V["ACL_TDT_QUEUE_DEPTH_UINT32"]:
        if value == 0:
            raise InvalidValueError("queue depth must be positive")
        a.depth = value
    else:
        raise InvalidValueError(f"type {type} is not an acltdtQueueAttrType")
    return 0


@c_function("acltdtGetQueueAttr")
def acltdtGetQueueAttr(attr, type, len, paramRetSize, param):  # noqa: A002
    a = _attrs.get(attr, "attr")
    if type == V["ACL_TDT_QUEUE_NAME_PTR"]:
        return _param_write(param, len, paramRetSize, a.name_ptr, 8)
    if type == V["ACL_TDT_QUEUE_DEPTH_UINT32"]:
        return _param_write(param, len, paramRetSize, a.depth, 4)
    raise InvalidValueError(f"type {type} is not an acltdtQueueAttrType")


class Queue(Fifo):
    def __init__(self, qid: int, name: str, depth: int):
        super().__init__(depth)
        self.qid, self.name = qid, name


_queues: dict[int, Queue] = {}
_queue_names: set[str] = set()
_next_qid = [1]
_bound: dict[tuple[int, int], int] = {}   # (src, dst) -> status


@c_function("acltdtCreateQueue")
def acltdtCreateQueue(attr, qid):
    a = _attrs.get(attr, "attr")
    if not qid:
        raise null("qid")
    number = _next_qid[0]
    name = cdata.string(a.name_ptr) if a.name_ptr else f"npurt_queue_{number}"
    if name in _queue_names:
        raise InvalidValueError(f"a queue named {name!r} already exists")
    _next_qid[0] += 1
    _queues[number] = Queue(number, name, a.depth)
    _queue_names.add(name)
    qid[0] = number
    return 0


def _queue(qid) -> Queue:
    q = _queues.get(qid)
    if q is None:
        raise NpuError(f"qid {qid} is not a queue (acltdtCreateQueue)", C.ACL_ERROR_INVALID_QUEUE_ID)
    return q


@c_function("acltdtDestroyQueue")
def acltdtDestroyQueue(qid):
    q = _queue(qid)
    del _queues[qid]
    _queue_names.discard(q.name)
    for key in [k for k in _bound if qid in k]:
        del _bound[key]
    with q.cond:
        q.stopped = True
        q.cond.notify_all()
    return 0


def _destination(q: Queue) -> Queue:
    for (src, dst), status in _bound.items():
        if src == q.qid and status == V["ACL_TDT_QUEUE_ROUTE_BIND"] and dst in _queues:
            return _queues[dst]
    return q


class Buf:
    def __init__(self, size: int):
        self.block = cdata.ffi.new("char[]", max(size, 1))
        self.addr = int(cdata.ffi.cast("uintptr_t", self.block))
        self.size = size
        self.length = size
        self.user = bytearray(96)   # the buffer's private user-data area
        self.chain: list[int] = []


@c_function("acltdtAllocBuf")
def acltdtAllocBuf(size, type, buf):  # noqa: A002
    if not buf:
        raise null("buf")
    buf[0] = _bufs.new(Buf(size))
    return 0


@c_function("acltdtFreeBuf")
def acltdtFreeBuf(buf):
    _bufs.free(buf, "buf")
    return 0


@c_function("acltdtGetBufData")
def acltdtGetBufData(buf, dataPtr, size):
    b = _bufs.get(buf, "buf")
    if dataPtr:
        dataPtr[0] = b.addr
    if size:
        size[0] = b.size
    return 0


@c_function("acltdtSetBufDataLen")
def acltdtSetBufDataLen(buf, len):  # noqa: A002
    b = _bufs.get(buf, "buf")
    if len > b.size:
        raise InvalidValueError(f"len {len} is larger than the buffer ({b.size} bytes)")
    b.length = len
    return 0


@c_function("acltdtGetBufDataLen")
def acltdtGetBufDataLen(buf, len):  # noqa: A002
    if not len:
        raise null("len")
    len[0] = _bufs.get(buf, "buf").length
    return 0


@c_function("acltdtSetBufUserData")
def acltdtSetBufUserData(buf, dataPtr, size, offset):
    b = _bufs.get(buf, "buf")
    if offset + size > len(b.user):
        raise InvalidValueError(f"offset + size ({offset + size}) is past the {len(b.user)}-byte user data")
    b.user[offset:offset + size] = cdata.read(dataPtr, size)
    return 0


@c_function("acltdtGetBufUserData")
def acltdtGetBufUserData(buf, dataPtr, size, offset):
    b = _bufs.get(buf, "buf")
    if offset + size > len(b.user):
        raise InvalidValueError(f"offset + size ({offset + size}) is past the {len(b.user)}-byte user data")
    cdata.write(dataPtr, bytes(b.user[offset:offset + size]))
    return 0


@c_function("acltdtEnqueue")
def acltdtEnqueue(qid, buf, timeout):
    _bufs.get(buf, "buf")
    q = _destination(_queue(qid))
    q.put(("buf", buf), timeout, f"queue {q.qid}")
    return 0


@c_function("acltdtDequeue")
def acltdtDequeue(qid, buf, timeout):
    if not buf:
        raise null("buf")
    q = _queue(qid)
    kind, value = q.get(timeout, f"queue {qid}")
    if kind == "buf":
        buf[0] = value
    else:
        data, user = value
        b = Buf(len(data))
        cdata.ffi.memmove(b.block, data, len(data))
        b.user[:len(user)] = user
        buf[0] = _bufs.new(b)
    return 0


@c_function("acltdtEnqueueData")
def acltdtEnqueueData(qid, data, dataSize, userData, userDataSize, timeout, rsv):
    q = _destination(_queue(qid))
    payload = (cdata.read(data, dataSize) if dataSize else b"",
               cdata.read(userData, userDataSize) if userDataSize else b"")
    q.put(("data", payload), timeout, f"queue {q.qid}")
    return 0


@c_function("acltdtDequeueData")
def acltdtDequeueData(qid, data, dataSize, retDataSize, userData, userDataSize, timeout):
    q = _queue(qid)
    kind, value = q.get(timeout, f"queue {qid}")
    if kind == "buf":
        b = _bufs.free(value, "buf")
        payload, user = cdata.read(b.addr, b.length), bytes(b.user)
    else:
        payload, user = value
    if len(payload) > dataSize:
        raise InvalidValueError(f"dataSize ({dataSize}) is smaller than the {len(payload)} bytes dequeued")
    cdata.write(data, payload)
    if retDataSize:
        retDataSize[0] = len(payload)
    if userData and userDataSize:
        cdata.write(userData, user[:userDataSize].ljust(min(userDataSize, len(user) or userDataSize), b"\0"))
    return 0


@c_function("acltdtAttachQueue")
def acltdtAttachQueue(qid, timeout, permission):
    """One process owns the simulated device: it has every permission on every queue."""
    _queue(qid)
    if permission:
        permission[0] = (V["ACL_TDT_QUEUE_PERMISSION_MANAGE"] | V["ACL_TDT_QUEUE_PERMISSION_DEQUEUE"]
                         | V["ACL_TDT_QUEUE_PERMISSION_ENQUEUE"])
    return 0


@c_function("acltdtGrantQueue")
def acltdtGrantQueue(qid, pid, permission, timeout):
    _queue(qid)
    return 0


# ---------------------------------------------------------------- routes
class Route:
    def __init__(self, src: int, dst: int):
        self.src, self.dst, self.status = src, dst, V["ACL_TDT_QUEUE_ROUTE_UNBIND"]


@c_function("acltdtCreateQueueRoute")
def acltdtCreateQueueRoute(srcId, dstId):
    return _routes.new(Route(srcId, dstId))


@c_function("acltdtDestroyQueueRoute")
def acltdtDestroyQueueRoute(route):
    _routes.free(route, "route")
    return 0


@c_function("acltdtGetQueueRouteParam")
def acltdtGetQueueRouteParam(route, type, len, paramRetSize, param):  # noqa: A002
    r = _routes.get(route, "route")
    if type == V["ACL_TDT_QUEUE_ROUTE_SRC_UINT32"]:
        return _param_write(param, len, paramRetSize, r.src, 4)
    if type == V["ACL_TDT_QUEUE_ROUTE_DST_UINT32"]:
        return _param_write(param, len, paramRetSize, r.dst, 4)
    if type == V["ACL_TDT_QUEUE_ROUTE_STATUS_INT32"]:
        return _param_write(param, len, paramRetSize, r.status, 4)
    raise InvalidValueError(f"type {type} is not an acltdtQueueRouteParamType")


@c_function("acltdtCreateQueueRouteList")
def acltdtCreateQueueRouteList():
    return _lists.new([])


@c_function("acltdtDestroyQueueRouteList")
def acltdtDestroyQueueRouteList(routeList):
    _lists.free(routeList, "routeList")
    return 0


@c_function("acltdtAddQueueRoute")
def acltdtAddQueueRoute(routeList, route):
    r = _routes.get(route, "route")
    _lists.get(routeList, "routeList").append(Route(r.src, r.dst))
    return 0


@c_function("acltdtGetQueueRouteNum")
def acltdtGetQueueRouteNum(routeList):
    return len(_lists.get(routeList, "routeList"))


@c_function("acltdtGetQueueRoute")
def acltdtGetQueueRoute(routeList, index, route):
    routes = _lists.get(routeList, "routeList")
    r = _routes.get(route, "route")
    if index >= len(routes):
        raise InvalidValueError(f"index {index} is past the list's {len(routes)} routes")
    r.src, r.dst, r.status = routes[index].src, routes[index].dst, routes[index].status
    return 0


@c_function("acltdtBindQueueRoutes")
def acltdtBindQueueRoutes(qRouteList):
    routes = _lists.get(qRouteList, "qRouteList")
    for r in routes:
        _queue(r.src)
        _queue(r.dst)
    for r in routes:
        r.status = V["ACL_TDT_QUEUE_ROUTE_BIND"]
        _bound[(r.src, r.dst)] = r.status
    return 0


@c_function("acltdtUnbindQueueRoutes")
def acltdtUnbindQueueRoutes(qRouteList):
    for r in _lists.get(qRouteList, "qRouteList"):
        _bound.pop((r.src, r.dst), None)
        r.status = V["ACL_TDT_QUEUE_ROUTE_UNBIND"]
    return 0


class Query:
    def __init__(self):
        self.mode, self.src, self.dst = V["ACL_TDT_QUEUE_ROUTE_QUERY_SRC"], 0, 0


@c_function("acltdtCreateQueueRouteQueryInfo")
def acltdtCreateQueueRouteQueryInfo():
    return _queries.new(Query())


@c_function("acltdtDestroyQueueRouteQueryInfo")
def acltdtDestroyQueueRouteQueryInfo(info):
    _queries.free(info, "info")
    return 0


@c_function("acltdtSetQueueRouteQueryInfo")
def acltdtSetQueueRouteQueryInfo(param, type, len, value):  # noqa: A002
    q = _queries.get(param, "param")
    v = _param_read(value, len)
    if type == V["ACL_TDT_QUEUE_ROUTE_QUERY_MODE_ENUM"]:
        q.mode = v
    elif type == V["ACL_TDT_QUEUE_ROUTE_QUERY_SRC_ID_UINT32"]:
        q.src = v
    elif type == V["ACL_TDT_QUEUE_ROUTE_QUERY_DST_ID_UINT32"]:
        q.dst = v
    else:
        raise InvalidValueError(f"type {type} is not an acltdtQueueRouteQueryInfoParamType")
    return 0


@c_function("acltdtQueryQueueRoutes")
def acltdtQueryQueueRoutes(queryInfo, qRouteList):
    q = _queries.get(queryInfo, "queryInfo")
    out = _lists.get(qRouteList, "qRouteList")
    match = {V["ACL_TDT_QUEUE_ROUTE_QUERY_SRC"]: lambda s, d: s == q.src,
             V["ACL_TDT_QUEUE_ROUTE_QUERY_DST"]: lambda s, d: d == q.dst,
             V["ACL_TDT_QUEUE_ROUTE_QUERY_SRC_AND_DST"]: lambda s, d: s == q.src and d == q.dst}.get(q.mode)
    if match is None:
        match = lambda s, d: _bound[(s, d)] == V["ACL_TDT_QUEUE_ROUTE_BIND_ABNORMAL"]  # noqa: E731
    for (s, d), status in _bound.items():
        if match(s, d):
            r = Route(s, d)
            r.status = status
            out.append(r)
    return 0


