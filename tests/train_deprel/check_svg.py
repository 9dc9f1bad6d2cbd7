#!/usr/bin/env python3
"""Second opinion on train_deprel's SVG: runs test_svg_plot with
SYNATTN_SVG_DIR set (its [svg-files] tests then write their figures there)
and parses each figure with xml.etree; fails on a parse error, a missing
figure, or a coordinate attribute that is not a finite number."""
import math
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

exe = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, SYNATTN_SVG_DIR=d)
    subprocess.run([exe, "[svg-files]"], env=env, check=True, stdout=subprocess.DEVNULL)
    names = sorted(os.listdir(d))
    assert names == ["curves.svg", "flat.svg", "heat.svg"], names
    for name in names:
        root = ET.parse(os.path.join(d, name)).getroot()
        assert root.tag.endswith("svg"), (name, root.tag)
        for el in root.iter():
            for key in ("x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "width", "height"):
                if key in el.attrib and not el.attrib[key].endswith("%"):
                    assert math.isfinite(float(el.attrib[key])), (name, el.tag, key, el.attrib[key])
            if "points" in el.attrib:
                for pair in el.attrib["points"].split():
                    assert all(math.isfinite(float(v)) for v in pair.split(",")), (name, pair)
print("svg ok:", ", ".join(names))
