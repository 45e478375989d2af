"""A tiny job: writes a result file and prints the success marker."""

import json
import os
import sys

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
greeting = os.environ.get("GREETING", "hello")
with open(os.path.join(out_dir, "result.json"), "w") as handle:
    json.dump({"greeting": greeting, "python": sys.version.split()[0]}, handle)
print(f"{greeting} from the pod; wrote {out_dir}/result.json")
