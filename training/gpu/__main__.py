import sys

from training.gpu.pipeline import main

sys.exit(main())
