# For each early measurement of a selftest directory (--save-traces): where
# each SM's first changed iteration lies against the detector's estimate and
# the emulated switch's in-effect time. Prints a summary, one line each.
import csv, glob, json, os, sys
d = sys.argv[1]
st = json.load(open(os.path.join(d, 'selftest.json')))
ms = st['accuracy']['measurements']
iters = {int(k): v for k, v in st['iteration_ns'].items()}
for f in sorted(glob.glob(os.path.join(d, '*_vm_0.csv'))):
    init, target = map(int, os.path.basename(f).split('_')[:2])
    rows = list(csv.DictReader(open(f)))
    tf = os.path.join(d, 'traces', os.path.basename(f))
    if not os.path.exists(tf):
        print('no traces for', f); continue
    tr = {}
    for r in csv.DictReader(open(tf)):
        tr.setdefault(int(r['measurement']), {}).setdefault(int(r['sm']), []).append(
            (int(r['iteration']), int(r['start_from_request_ns']), int(r['duration_ns'])))
    mi, mt = iters[init], iters[target]
    for row in rows:
        idx = int(row['index'])
        meas = float(row['switching_latency_ms'])
        m = next((x for x in ms if x['init_mhz'] == init and abs(x['measured_ms'] - meas) < 1e-6), None)
        if m is None or m.get('in_effect_us') is None: continue
        resid = m['error_minus_in_effect_us']
        early = resid < -m['sync_uncertainty_us']
        if not early and idx % 20 != 1: continue
        in_effect_ns = (m['true_ms'] * 1e3 + m['in_effect_us']) * 1e3
        est_ns = meas * 1e6
        firsts = []
        for sm, its in tr.get(idx, {}).items():
            its.sort()
            ch = next(((i, s, du) for i, s, du in its if s >= -5000 and abs(du - mi) > 0.3 * abs(mt - mi)), None)
            if ch: firsts.append((ch[1], ch[1] + ch[2], sm, ch[2]))
        firsts.sort()
        if not firsts: print(init, target, idx, 'no change found'); continue
        last = firsts[-1]
        after_est = sum(1 for s, e, sm, du in firsts if e > est_ns)
        print(f"{init}->{target} #{idx} {'EARLY' if early else 'ok'} resid {resid:+.2f} us; est-in_effect {(est_ns-in_effect_ns)/1e3:+.2f} us; "
              f"latest SM {last[2]} mixed [{(last[0]-in_effect_ns)/1e3:+.2f},{(last[1]-in_effect_ns)/1e3:+.2f}] us vs in_effect, dur {last[3]} "
              f"(init {mi:.0f} target {mt:.0f}); 2nd latest end {(firsts[-2][1]-in_effect_ns)/1e3:+.2f}; SMs whose changed iteration ends after est: {after_est}/{len(firsts)}")
