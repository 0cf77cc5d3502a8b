"""Feeding the training loop: batches prepared ahead in a thread, the batch size per device.

:func:`prefetched` (``train.prefetch_batches``; by default on CUDA only) runs the
collation of the next batches (``Featurizer.collate`` and the copy to the device, pinned
and non-blocking on CUDA) in a background thread, at most ``depth`` batches ahead, so the
device never waits for Python between steps; exceptions reach the training loop, and
leaving the loop early (pre-emption) stops the thread. On the CPU the thread would take
cores from the model, so it is off there unless asked for. Collation draws no random
numbers, so a seeded training gives the same weights with and without it.

:func:`device_batch` applies ``train.gpu_batch_size``: on CUDA that batch size, with every
learning rate scaled by ``gpu_batch_size / batch_size`` (the linear scaling rule of
Goyal et al. 2017); on the CPU, ``batch_size`` as configured.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


def prefetched(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """``items``, produced by a background thread up to ``depth`` ahead (0: in this one)."""
    if depth <= 0:
        yield from items
        return
    box: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item: object) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not offer(item):
                    return
            offer(_DONE)
        except BaseException as err:  # handed to the consumer, raised there
            offer(_Failure(err))

    worker = threading.Thread(target=produce, name="batch-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = box.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()


def prefetch_depth(setting: int | None, device_type: str) -> int:
    """``train.prefetch_batches`` for ``device_type`` (None: 2 on CUDA, 0 on the CPU)."""
    if setting is None:
        return 2 if device_type == "cuda" else 0
    return max(0, int(setting))


def device_batch(batch_size: int, gpu_batch_size: int | None, device_type: str
                 ) -> tuple[int, float]:
    """(batch size, learning-rate factor) for training on ``device_type``."""
    if device_type != "cuda" or not gpu_batch_size or gpu_batch_size == batch_size:
        return batch_size, 1.0
    return int(gpu_batch_size), gpu_batch_size / batch_size
