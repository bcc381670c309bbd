#!/bin/bash
# First check on the H200: the probe end to end, script 01, and a few variants.
set -u
H=.device/headroom
L=$OUT/logs; mkdir -p $L $OUT/w
export PYTHONUNBUFFERED=1
nvidia-smi > $L/nvidia-smi.txt 2>&1
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE > $L/nvidia-smi-q.txt 2>&1
ldconfig -p | grep -E "libcublas|libcuda|nvidia-ml" > $L/ldconfig.txt 2>&1
t0=$(date +%s%N)
$H probe --out $OUT/w/run-default > $L/probe-default.out 2> $L/probe-default.err; echo "rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))" >> $L/probe-default.out
(cd $OUT/w && timeout 200 /opt/torch/.venv/bin/python $OLDPWD/.device/roofline_probe.py > $L/script01.out 2>&1; echo rc=$? >> $L/script01.out)
$H probe --out $OUT/w/run-win5 --window 5ms --batches 1,1024,2048,4096 --buffers 512,4096 > $L/probe-win5.out 2>&1; echo rc=$? >> $L/probe-win5.out
for cfg in "256 8" "1024 2" "128 16" "512 8" "256 16"; do
  set -- $cfg
  $H probe --out $OUT/w/run-copy-$1-$2 --batches 1 --buffers 1024,4096 --copy-threads $1 --copy-blocks-per-sm $2 > $L/probe-copy-$1-$2.out 2>&1; echo rc=$? >> $L/probe-copy-$1-$2.out
done
tar czf $OUT/all.tgz -C $OUT logs w
rm -rf $OUT/logs $OUT/w
tar xzf $OUT/all.tgz -C /tmp && grep -HE "bandwidth  |peak observed|ridge|90%|rc=|4096 MiB" /tmp/logs/*.out; tail -8 /tmp/logs/script01.out
