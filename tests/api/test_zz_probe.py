from tests.api.conftest import Api, context_body


def test_probe(api: Api) -> None:
    r = api.post("/v1/contexts", context_body())
    for m, p in [("GET", "/v1/namespaces/team1/contexts/research-memory"), ("GET", "/v1/namespaces/team1/contexts/research%2Dmemory"),
                 ("GET", "/v1/namespaces/team1/contexts/research-memory/grants"),
                 ("GET", "/v1/namespaces/team1/contexts/research-memory/consumers"),
                 ("POST", "/v1/namespaces/team1/contexts/research-memory"),
                 ("PATCH", "/v1/namespaces/team1/contexts/research-memory/grants"),
                 ("GET", "/v1/contexts"), ("POST", "/healthz"), ("GET", "/healthz/"), ("GET", "/schema"),
                 ("OPTIONS", "/v1/namespaces/team1/contexts/research-memory"),]:
        r = api.request(m, p)
        print(m, p, r.status_code, dict(r.headers), r.text[:300])
