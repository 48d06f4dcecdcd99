"""A stand-in CDL processor for the harness tests: it prints its input unchanged.

It exits with status 1 when the document's root is not cdl:cdl in the CDL
namespace, so that an error case can pass. It reads the document by its file
name relative to the working directory, and refuses a relative argument, so
every run also checks that the harness passes an absolute, properly quoted
path and runs the processor in the case directory.
"""

import sys
from pathlib import Path
from xml.etree import ElementTree

CDL_ROOT = "{http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0}cdl"


def main(argv: list[str]) -> int:
    """Echo the document named by argv[1] to stdout; 1 if it is not CDL, 2 on misuse."""
    if len(argv) != 2 or not Path(argv[1]).is_absolute():
        print(f"usage: fake_processor.py ABSOLUTE_PATH (got {argv[1:]})", file=sys.stderr)
        return 2
    data = Path(Path(argv[1]).name).read_bytes()
    if ElementTree.fromstring(data).tag != CDL_ROOT:
        print("error: the root element is not cdl:cdl", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
