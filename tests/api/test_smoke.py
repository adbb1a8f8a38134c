from tests.api.conftest import Api, context_body


def test_create_then_list_sees_the_write(api: Api) -> None:
    created = api.post("/v1/contexts", context_body(size="1024Mi"))
    assert created.status_code == 201
    assert created.json()["storage"]["size"] == "1Gi"
    listed = api.get("/v1/namespaces/team1/contexts")
    assert [c["name"] for c in listed.json()["items"]] == ["research-memory"]
