"""archscope's own network split over processes with torch.distributed (DTensor), measured
against the analytic plan (archscope/estimate/parallel.py).

- support.py: which specs and splits a sharded run takes (refusals name what is unsupported);
- styles.py: the sharding plan as DTensor parallel styles, read off the plan's own tables;
- comms.py: the collectives of a forward, recorded through CommDebugMode, priced by the plan;
- meta_plan.py: `archscope plan`, every rank on the meta device under a fake process group;
- worker.py / launch.py: `archscope profile --tp/--ep`, one process per rank (elastic launch).
"""
