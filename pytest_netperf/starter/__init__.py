"""``netperf init``: a team's Compose file surveyed (``survey``), the starter files rendered
from it (``render``) and written all or none (``files``)."""
