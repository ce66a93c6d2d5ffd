"""``/openapi.json`` documents itself: every field of every public model has its description.

The models of ``gradtrace.schema`` are the one home of the public shapes; each field carries a
``description=`` (the words docs/CONTRACT.md's tables are made from), and the service serves
them. Read from the running service over HTTP, as a client generator or Swagger UI reads it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import httpx
from pydantic import BaseModel

import gradtrace.schema
from gradtrace.schema.document import Node


def schema_models() -> dict[str, type[BaseModel]]:
    """Every pydantic model defined in a module of ``gradtrace.schema``, and every subclass the
    service serves in its stead (``StrictRunRequest``), by name → the schema's model."""
    importlib.import_module("gradtrace.api.app")  # the service's own subclasses, as it serves them

    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(gradtrace.schema.__path__, "gradtrace.schema."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == module.__name__:
                todo = [obj]
                while todo:
                    sub = todo.pop()
                    found[sub.__name__] = obj
                    todo.extend(sub.__subclasses__())
    return found


def _model_name(component: str) -> str:
    """``RunDocument-Output`` → ``RunDocument`` (FastAPI splits models that differ in and out)."""
    return component.removesuffix("-Input").removesuffix("-Output")


def test_every_property_of_every_schema_model_served_has_a_description(api: httpx.Client) -> None:
    spec = api.get("/openapi.json").json()
    models = schema_models()
    components = {name: s for name, s in spec["components"]["schemas"].items() if _model_name(name) in models}
    served = {models[_model_name(name)].__name__ for name in components}
    # the run document and what it holds, the requests, the gradient check and the errors are all served
    assert {"RunDocument", "Node", "TensorValue", "Event", "RunRequest", "GradcheckResult", "ErrorResponse",
            "Explanation", "GoalReport"} <= served, sorted(served)
    missing = [f"{name}.{prop}" for name, s in components.items()
               for prop, body in s.get("properties", {}).items() if not (body.get("description") or "").strip()]
    assert not missing, f"served without a description (write description= in backend/gradtrace/schema/): {missing}"


def test_the_served_description_is_the_models_own(api: httpx.Client) -> None:
    spec = api.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    node = schemas.get("Node") or schemas["Node-Output"]
    for field in ("seq", "grad", "saved_args"):
        assert node["properties"][field]["description"] == Node.model_fields[field].description
