"""``fakebroker campaign`` as a file ``spark-submit`` can run on a cluster (it runs scripts,
not ``-m``): the same options, the session and master spark-submit made::

    spark-submit --master spark://HOST:7077 --archives env.tar.gz#env \\
        --conf spark.pyspark.python=./env/bin/python \\
        "$(python -c 'import fakebroker.cli.submit_campaign as m; print(m.__file__)')" \\
        examples/campaigns/commit_first.py --seeds 5000 --shrink --out out/
"""

from __future__ import annotations

from fakebroker.cli.campaign import campaign

if __name__ == "__main__":
    campaign(prog_name="fakebroker campaign")
