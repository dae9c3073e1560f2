import numpy as np, struct, sys
def load(path):
    b=open(path,'rb').read()
    h=struct.unpack('10d',b[:80]); off=80
    nsm=struct.unpack('q',b[off:off+8])[0]; off+=8
    sms=[]
    for _ in range(nsm):
        sm,first,n=struct.unpack('3q',b[off:off+24]); off+=24
        d=np.frombuffer(b[off:off+4*n],dtype=np.uint32).astype(np.int64); off+=4*n
        mi,mt=struct.unpack('2d',b[off:off+16]); off+=16
        sms.append(dict(sm=sm,first=first,d=d,mi=mi,mt=mt))
    keys=['req','truth_ms','in_effect_us','outcome','pooled_ms','paper_ms','init','target','ct','ci']
    return dict(zip(keys,h)),sms
