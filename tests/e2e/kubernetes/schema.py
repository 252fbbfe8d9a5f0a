"""Validates Kubernetes objects: core kinds through python3-kubernetes' models
(every field known, of its type, required fields present), custom resources
through the facts in crd_schemas.yaml (their pod templates again through the
core models). validate(obj) returns a list of 'path: problem' strings."""
import os
import re

import kubernetes.client
import yaml

FACTS = yaml.safe_load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "crd_schemas.yaml")))
_client = kubernetes.client.ApiClient()
PRIMITIVE = {"str": str, "int": int, "bool": bool, "float": (int, float)}


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_model(value, typ, path, errs):
    """A value against a python-kubernetes openapi type string."""
    if typ.startswith("list["):
        if not isinstance(value, list):
            return errs.append(f"{path}: expected a list, got {type(value).__name__}")
        for i, item in enumerate(value):
            check_model(item, typ[5:-1], f"{path}[{i}]", errs)
    elif typ.startswith("dict("):
        if not isinstance(value, dict):
            return errs.append(f"{path}: expected a map, got {type(value).__name__}")
        inner = typ[typ.index(",") + 1:-1].strip()
        for k, v in value.items():
            check_model(v, inner, f"{path}.{k}", errs)
    elif typ in ("object", "datetime", "date"):
        pass  # IntOrString, RawExtension, times: any scalar the server parses
    elif typ in PRIMITIVE:
        ok = _is_int(value) if typ == "int" else isinstance(value, PRIMITIVE[typ]) and not (
            typ != "bool" and isinstance(value, bool))
        if not ok:
            errs.append(f"{path}: expected {typ}, got {type(value).__name__} {value!r}")
    else:
        cls = getattr(kubernetes.client, typ)
        if not isinstance(value, dict):
            return errs.append(f"{path}: expected an object ({typ}), got {type(value).__name__}")
        by_json = {j: a for a, j in cls.attribute_map.items()}
        for k, v in value.items():
            if k not in by_json:
                errs.append(f"{path}.{k}: unknown field of {typ}")
            elif v is not None:
                check_model(v, cls.openapi_types[by_json[k]], f"{path}.{k}", errs)
        if not errs:
            try:  # the models' setters refuse a missing required field
                _client._ApiClient__deserialize(value, typ)
            except (ValueError, TypeError) as e:
                errs.append(f"{path}: {e}")


def check_fact(value, typ, path, errs):
    """A value against a type of crd_schemas.yaml."""
    if isinstance(typ, str):
        if typ.startswith("core:"):
            return check_model(value, typ[5:], path, errs)
        if typ == "any":
            return
        if typ == "int-or-str":
            if not (_is_int(value) or isinstance(value, str)):
                errs.append(f"{path}: expected an integer or a string, got {value!r}")
            return
        if typ in PRIMITIVE:
            return check_model(value, typ, path, errs)
        return check_fact(value, FACTS["types"][typ], path, errs)
    if isinstance(typ, list):
        if not isinstance(value, list):
            return errs.append(f"{path}: expected a list, got {type(value).__name__}")
        for i, item in enumerate(value):
            check_fact(item, typ[0], f"{path}[{i}]", errs)
        return
    if "map" in typ:
        if not isinstance(value, dict):
            return errs.append(f"{path}: expected a map, got {type(value).__name__}")
        for k, v in value.items():
            if "keys" in typ and k not in typ["keys"]:
                errs.append(f"{path}.{k}: not one of {typ['keys']}")
            check_fact(v, typ["map"], f"{path}.{k}", errs)
        return
    if "enum" in typ:
        if value not in typ["enum"]:
            errs.append(f"{path}: {value!r} is not one of {typ['enum']}")
        return
    if "pattern" in typ:
        if not isinstance(value, str) or not re.search(typ["pattern"], value):
            errs.append(f"{path}: {value!r} does not match {typ['pattern']}")
        return
    if "min" in typ:
        if not _is_int(value) or value < typ["min"]:
            errs.append(f"{path}: expected an integer >= {typ['min']}, got {value!r}")
        return
    if not isinstance(value, dict):
        return errs.append(f"{path}: expected an object, got {type(value).__name__}")
    for name in typ.get("required", []):
        if name not in value:
            errs.append(f"{path}: missing required field '{name}'")
    for k, v in value.items():
        if k not in typ["fields"]:
            errs.append(f"{path}.{k}: unknown field")
        else:
            check_fact(v, typ["fields"][k], f"{path}.{k}", errs)


def validate(obj):
    errs = []
    if not isinstance(obj, dict) or "apiVersion" not in obj or "kind" not in obj:
        return ["document: not a Kubernetes object (apiVersion and kind)"]
    api, kind = obj["apiVersion"], obj["kind"]
    where = f"{kind}/{(obj.get('metadata') or {}).get('name', '?')}"
    crd = FACTS["kinds"].get(f"{api} {kind}")
    if crd:
        for name in crd["required"]:
            if name not in obj:
                errs.append(f"{where}: missing required field '{name}'")
        for k, v in obj.items():
            if k in ("apiVersion", "kind"):
                continue
            if k == "metadata":
                check_model(v, "V1ObjectMeta", f"{where}.metadata", errs)
            elif k == "spec":
                check_fact(v, crd["spec"], f"{where}.spec", errs)
            else:
                errs.append(f"{where}.{k}: unknown field")
        return errs
    version = api.split("/")[-1]
    typ = version[0].upper() + version[1:] + kind
    if not hasattr(kubernetes.client, typ) or getattr(kubernetes.client, typ).attribute_map.get("kind") != "kind":
        return [f"{where}: no schema for {api} {kind}"]
    group = api.split("/")[0] if "/" in api else ""
    known = {"": "core", "apps": "apps", "batch": "batch", "rbac.authorization.k8s.io": "rbac"}
    if group not in known:
        return [f"{where}: no schema for {api} {kind}"]
    check_model(obj, typ, where, errs)
    return errs
