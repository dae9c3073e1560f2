import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load import load
import numpy as np, glob
def phase(path, binus=200):
    h,sms=load(path)
    sw=h['truth_ms']*1e6
    per=[]
    for s in sms:
        d=s['d'].astype(float); st=float(s['first']-int(h['req']))+np.concatenate([[0],np.cumsum(d)[:-1]])
        m=(st>sw+200e3); m[-64:]=False
        idx=np.arange(len(d))
        if m.sum()<100: return None,None
        b,a=np.polyfit(idx[m],st[m],1)
        per.append((st[m],st[m]-(a+b*idx[m])))
    lo=max(p[0][0] for p in per); hi=min(p[0][-1] for p in per)
    edges=np.arange(lo,hi,binus*1e3)
    med=[np.median([np.mean(r[(t>=x)&(t<y)]) for t,r in per if ((t>=x)&(t<y)).any()]) for x,y in zip(edges[:-1],edges[1:])]
    return h,np.array(med)
for p in sys.argv[1:]:
    h,med=phase(p)
    if med is None: continue
    print(p.split('/')[-2]+'/'+p.split('/')[-1], int(h['init']),'->',int(h['target']), ' '.join('%.0f'%x for x in med[::1][:80]))
