#!/bin/sh
# Re-makes the fixtures from their sources (see README.md); run from this
# directory. The tecken example is cut from the .rst's http blocks.
set -eu
samply=https://raw.githubusercontent.com/mstange/samply/cd249936e3ffe70ec2c57e3f98cc1f571c89ff6d
tecken=https://raw.githubusercontent.com/mozilla-services/tecken/080d936d0ab5c47cde9168188c2fd061e0b07c25
curl -fsSL -o example-linux "$samply/fixtures/other/example-linux"
curl -fsSL -o firefox "$samply/fixtures/linux64-ci/firefox"
curl -fsSL -o LICENSE-samply-MIT "$samply/LICENSE-MIT"
curl -fsSL -o LICENSE-tecken-MPL-2.0 https://raw.githubusercontent.com/mozilla-services/tecken/main/LICENSE
curl -fsSL "$tecken/docs/symbolication.rst" | python3 -c '
import re, sys, textwrap
rst = sys.stdin.read()
v5 = rst[rst.index("/symbolicate/v5\n====="):rst.index("/symbolicate/v4")]
blocks = re.findall(r"sourcecode:: http\n\n(.*?)\n\n   \*\*", v5 + "\n\n   **", re.S)
req, resp = (textwrap.dedent(b) for b in blocks[:2])
open("tecken-example-request.json", "w").write(req[req.index("{"):].rstrip() + "\n")
open("tecken-example-response.json", "w").write(resp[resp.index("{"):].rstrip() + "\n")
'
