#!/bin/sh
# spirt-torch - a PyTorch nn.Module as a spirt function (spirt-torch(1))
#
# Runs python3 -m spirt.torch (python/spirt/torch.py) with the package
# found next to this script: python/ in the build tree, else the
# dist-packages directory make install put it in, ../lib/python3*/ from
# here; else where python3 itself finds it.  SPIRT_PYTHON names the
# interpreter (default python3).
here=${0%/*}
[ "$here" = "$0" ] && here=.
pkg=
if [ -f "$here/python/spirt/torch.py" ]; then
	pkg=$here/python
	# run from the build tree: no __pycache__ written into it
	PYTHONDONTWRITEBYTECODE=1 && export PYTHONDONTWRITEBYTECODE
else
	for d in "$here"/../lib/python3*/dist-packages; do
		[ -f "$d/spirt/torch.py" ] && pkg=$d
	done
fi
[ -n "$pkg" ] && PYTHONPATH=$pkg${PYTHONPATH:+:$PYTHONPATH} &&
    export PYTHONPATH
exec "${SPIRT_PYTHON:-python3}" -m spirt.torch "$@"
