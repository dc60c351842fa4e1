# The A/B of this folder: every measured figure of each benchmark, before (e1c71ce) and after
# (commit.txt), two runs each; a figure is worse beyond noise where after's best is more than
# 2% below before's worst (above, for times). python3 compare.py [full]
import json, glob, os, re, collections, sys
vals = collections.defaultdict(lambda: {'before': [], 'after': []})
units = {}
order = []
for part in ['part1', 'part2']:
    for d in sorted(glob.glob(f'{part}/*'), key=lambda p: int(os.path.basename(p).split('-')[0])):
        tree = d.split('-')[-1]
        cmd = open(f'{d}/cmd.txt').read().strip().replace('motifcl-bench ', '')
        cmd = re.sub(r' --warmup \S+| --repeat \S+', '', cmd)
        for j in glob.glob(f'{d}/*.json'):
            w = json.load(open(j))
            for f in w['figures']:
                if f['label'] != 'measured': continue
                key = (cmd, f['name'])
                if key not in vals: order.append(key)
                vals[key][tree].append(f['value']); units[key] = f['unit']
worse = []
rows = []
for key in order:
    b, a = vals[key]['before'], vals[key]['after']
    if not a or not b: continue
    u = units[key]
    lower_better = u in ('us', 'ms', 's')
    bm, am = sum(b)/len(b), sum(a)/len(a)
    rel = (am - bm) / bm * 100 if bm else 0
    if lower_better: rel = -rel
    rows.append((key, u, b, a, rel))
    # worse beyond noise: after's best below before's worst by > 2%
    if (not lower_better and max(a) < min(b) * 0.98) or (lower_better and min(a) > max(b) * 1.02):
        worse.append((key, u, b, a, rel))
print(f"{len(rows)} figures compared; mean change after vs before (higher is better): "
      f"median {sorted(r[4] for r in rows)[len(rows)//2]:+.2f}%, min {min(r[4] for r in rows):+.2f}%, max {max(r[4] for r in rows):+.2f}%")
print("worse beyond noise (after's best below before's worst by more than 2%):", len(worse))
for key, u, b, a, rel in worse: print('  ', key, u, b, a, f'{rel:+.1f}%')
if len(sys.argv) > 1:
    for key, u, b, a, rel in rows:
        print(f"{key[0]:<28} | {key[1]:<70} | {u:<9} | " + ' '.join(f'{x:.4g}' for x in b) + ' | ' + ' '.join(f'{x:.4g}' for x in a) + f' | {rel:+.1f}%')
