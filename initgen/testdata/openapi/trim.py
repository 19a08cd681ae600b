#!/usr/bin/env python3
"""Regenerates the trimmed OpenAPI excerpts the golden tests of
initgen/openapi_test.go read, from the descriptions the packages ship:

  npm install --prefix /tmp/oct @octokit/openapi
  go mod download -json github.com/stripe/stripe-mock@latest   # prints its Dir

  python3 trim.py /tmp/oct/node_modules/@octokit/openapi/generated/api.github.com.json \\
                  $DIR/embedded/openapi/spec3.json

Each excerpt keeps, unchanged, the GET operations tested, the components
they reference (transitively), the servers, security and security
schemes: a real description, small enough to commit."""
import json, sys

def refs(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith("#/"):
            out.add(r)
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)

def lookup(doc, ref):
    node = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node

def trim(doc, paths):
    out = {k: doc[k] for k in ("openapi", "info", "servers", "security") if k in doc}
    out["paths"] = {p: {"get": doc["paths"][p]["get"]} for p in paths}
    seen, todo = set(), set()
    refs(out["paths"], todo)
    while todo:
        r = todo.pop()
        if r in seen:
            continue
        seen.add(r)
        refs(lookup(doc, r), todo)
    comps = {}
    for r in sorted(seen):
        parts = r[2:].split("/")
        if parts[0] != "components":
            continue
        comps.setdefault(parts[1], {})[parts[2]] = doc["components"][parts[1]][parts[2]]
    if "securitySchemes" in doc.get("components", {}):
        comps["securitySchemes"] = doc["components"]["securitySchemes"]
    out["components"] = comps
    return out

def main():
    github, stripe = sys.argv[1], sys.argv[2]
    for src, dst, paths in [
        (github, "github.json", ["/organizations", "/orgs/{org}/repos", "/repos/{owner}/{repo}/issues", "/user/repos"]),
        (stripe, "stripe.json", ["/v1/customers", "/v1/customers/{customer}/tax_ids", "/v1/charges", "/v1/customers/search"]),
    ]:
        with open(src) as f:
            doc = json.load(f)
        with open(dst, "w") as f:
            json.dump(trim(doc, paths), f, indent=None if dst == "stripe.json" else 1, sort_keys=True, separators=(",", ":") if dst == "stripe.json" else None)
            f.write("\n")

if __name__ == "__main__":
    main()
