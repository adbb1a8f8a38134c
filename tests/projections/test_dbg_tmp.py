from tests.projections.test_query_index import *
def test_dbg(container):
    n = write_history(container.contexts, seed=11, steps=250)
    print("indexes", n)
    assert container.runner("query_index").wait_for(container.store.head(), timeout=30)
    for t in TABLES:
        print(t, len(snapshot(container)[t]))
    for name in NAMES:
        print(container.contexts.load("ns", name)[1].index_revision)
