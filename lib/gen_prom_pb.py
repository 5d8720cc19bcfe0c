#!/usr/bin/env python3
"""gen_prom_pb.py - compile Prometheus's metrics.proto with protoc-c, flat.

   gen_prom_pb.py PROTOC_C OUTDIR CLIENT_MODEL_DIR WKT_DIR

protoc-c writes each generated file under its proto package's path
(io/prometheus/client/metrics.pb-c.c, google/protobuf/timestamp.pb-c.c), but a
meson target's outputs must sit in one directory. This runs protoc-c into a
scratch directory and moves the four files into OUTDIR, pointing their
#include lines at the flat names. The .proto files are Debian's, unchanged:
metrics.proto from golang-github-prometheus-client-model-dev and the
timestamp.proto it imports from libprotobuf-dev.
"""
import os
import subprocess
import sys
import tempfile

METRICS = 'io/prometheus/client/metrics'
TIMESTAMP = 'google/protobuf/timestamp'


def main():
    protoc, outdir, model_dir, wkt_dir = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([protoc, '--c_out=' + tmp, '-I' + model_dir, '-I' + wkt_dir,
                        os.path.join(model_dir, METRICS + '.proto'),
                        os.path.join(wkt_dir, TIMESTAMP + '.proto')], check=True)
        for stem in (METRICS, TIMESTAMP):
            for ext in ('.pb-c.c', '.pb-c.h'):
                with open(os.path.join(tmp, stem + ext)) as f:
                    text = f.read()
                for other in (METRICS, TIMESTAMP):
                    text = text.replace('"%s.pb-c.h"' % other,
                                        '"%s.pb-c.h"' % os.path.basename(other))
                with open(os.path.join(outdir, os.path.basename(stem) + ext), 'w') as f:
                    f.write(text)


if __name__ == '__main__':
    main()
