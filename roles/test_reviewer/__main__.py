"""``python -m roles.test_reviewer``: review the staged workspace and vote."""

import sys

from roles.test_reviewer import main

if __name__ == "__main__":  # importing this module (the image's check walks every module) runs nothing
    sys.exit(main())
