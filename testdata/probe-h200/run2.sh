#!/bin/bash
# Validation on the H200s: headroom probe and script 01 alternating on GPU 0,
# then headroom probe --devices all.
set -u
H=.device/headroom
L=$OUT/logs; W=$OUT/w; mkdir -p $L $W
export PYTHONUNBUFFERED=1
nvidia-smi > $L/nvidia-smi.txt 2>&1
/opt/torch/.venv/bin/python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cublas', torch.backends.cuda.preferred_blas_library())" > $L/torch.txt 2>&1
for i in 1 2 3; do
  t0=$(date +%s%N)
  $H probe --out $W/headroom-$i > $L/headroom-$i.out 2> $L/headroom-$i.err
  echo "rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))" >> $L/headroom-$i.out
  t0=$(date +%s%N)
  (cd $W && /opt/torch/.venv/bin/python $OLDPWD/.device/roofline_probe.py > $L/script-$i.out 2>&1; echo "rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))" >> $L/script-$i.out; mv roofline_NVIDIA_H200.json script-$i.json)
done
$H probe --devices all --out $W/headroom-all > $L/headroom-all.out 2> $L/headroom-all.err; echo "rc=$?" >> $L/headroom-all.out
tar czf $OUT/all.tgz -C $OUT logs w
tar xzf $OUT/all.tgz -C /tmp && rm -rf $L $W
cd /tmp/logs && grep -HE "bandwidth  |peak observed|ridge|90%|rc=|^ +1 " headroom-*.out script-*.out | grep -v "^script.*B=" ; grep -H "B=1 " script-*.out; grep -h warning headroom-all.out
