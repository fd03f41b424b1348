import sys
from pathlib import Path

# Test helpers (reference.py, trine_testing.py) are plain modules in tests/.
sys.path.insert(0, str(Path(__file__).resolve().parent))
