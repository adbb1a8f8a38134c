import time
from src import bootstrap
from src.config import Settings


def test_probe(settings, database_url) -> None:
    t = time.monotonic()
    built = bootstrap.build(settings, url=database_url, pool_size=4)
    print("build", time.monotonic() - t); t = time.monotonic()
    built.start_workers()
    print("start", time.monotonic() - t); t = time.monotonic()
    for w in reversed(built.started):
        w.stop()
        print("stop", w, time.monotonic() - t); t = time.monotonic()
    built.started.clear()
    built.store._closed.set()
    built.store._listener.join(5)
    print("listener", time.monotonic() - t); t = time.monotonic()
    built.store.datastore.close()
    print("ds close", time.monotonic() - t); t = time.monotonic()
