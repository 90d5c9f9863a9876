#!/usr/bin/python3
"""batch_mkinput.py N OUT.jsonl - N Batch API lines of mixed sizes for
tests/batch_run.sh: chat and completions, short and long prompts, 1 to 32
new tokens, greedy, plus stop strings and a system message now and then.
Deterministic (seeded) so a failure reproduces."""
import json
import random
import sys

WORDS = ("the sea river stone light north garden paper window quiet long "
         "city bread music winter horse letter morning bridge salt").split()


def main():
    n, path = int(sys.argv[1]), sys.argv[2]
    rnd = random.Random(17)
    with open(path, "w") as f:
        for i in range(n):
            words = rnd.randint(1, 200 if i % 7 == 0 else 40)
            text = " ".join(rnd.choice(WORDS) for _ in range(words))
            body = {"model": "default", "temperature": 0, "max_tokens": rnd.randint(1, 32)}
            if i % 3:
                msgs = [{"role": "user", "content": text}]
                if i % 5 == 0:
                    msgs.insert(0, {"role": "system", "content": "Answer briefly."})
                body["messages"] = msgs
                url = "/v1/chat/completions"
            else:
                body["prompt"] = text
                url = "/v1/completions"
            if i % 11 == 0:
                body["stop"] = ["."]
            f.write(json.dumps({"custom_id": "req-%03d" % i, "method": "POST",
                                "url": url, "body": body}) + "\n")


main()
