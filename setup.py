# Maps every package folder under src/ to pegboard.<name>; see docs/development.md.
from setuptools import find_packages, setup

setup(packages=["pegboard", *(f"pegboard.{name}" for name in find_packages("src"))])
