"""The course's Food-11 organising step, for the benchmark: after unzip,
move each <c>_<n>.jpg of every split into class_<cc>/, one class at a time,
scanning the split folder once per class (as the lab's init-data step does)."""
import os
import shutil
import sys

base = sys.argv[1]
for split in ("training", "validation", "evaluation"):
    split_dir = os.path.join(base, split)
    if not os.path.isdir(split_dir):
        continue
    for c in range(11):
        class_dir = os.path.join(split_dir, "class_%02d" % c)
        os.makedirs(class_dir, exist_ok=True)
        prefix = "%d_" % c
        for name in os.listdir(split_dir):
            if name.startswith(prefix):
                shutil.move(os.path.join(split_dir, name), os.path.join(class_dir, name))
