#!/usr/bin/env python3
"""examples/python/train_fashion.py — trains the mlp or the cnn of
DESIGN.md on Fashion-MNIST from Python (Adam lr 1e-3, batch 64), the way
examples/train_fashion does from C: batches from the idx reader through
the input pipeline (cache, shuffle, batch, scale, cast, prefetch), a
training and an inference pass of one weft.Model, a prepared training step
run until the data ends, then the test accuracy.

    python3 examples/python/train_fashion.py --model mlp --epochs 5
    python3 examples/python/train_fashion.py --model cnn --epochs 3 \\
        --checkpoints run/ckpt --export run/pymodel

It prints one line per epoch and ends with "test accuracy A"."""

import argparse
import os
import sys
import time

import numpy as np

import weft

DATA = "/usr/share/datasets/fashion-mnist"


def fashion(split, train, batch, data, seed, limit=0):
    ds = weft.Dataset.from_files(
        os.path.join(data, "%s-images-idx3-ubyte.gz" % split), format="idx",
        options={"label_file": "auto"})
    if limit:
        ds = ds.shard(max(1, 60000 // limit) if train else
                      max(1, 10000 // limit), 0)
    ds = ds.cache()
    if train:
        ds = ds.shuffle(60000, seed=seed)
    ds = ds.batch(batch if train else 500)
    ds = ds.map_scale("image", 1.0 / 255.0).map_cast("label", weft.int32)
    return ds.prefetch(4)


def network(m, x, cnn):
    """The DESIGN.md networks; logits (N, 10)."""
    if not cnn:
        h = m.dense(x, 256, activation="relu")
        h = m.dense(h, 128, activation="relu")
        return m.dense(h, 10)
    h = m.conv2d(x, 16, 3, padding="SAME", activation="relu")
    h = m.max_pool(h, 2)
    h = m.conv2d(h, 32, 3, padding="SAME", activation="relu")
    h = m.max_pool(h, 2)
    return m.dense(m.flatten(h), 10)


def images(x, cnn):
    return weft.reshape(x, np.array([-1, 28, 28, 1] if cnn else [-1, 784],
                                    np.int64))


def build(args):
    cnn = args.model == "cnn"
    g = weft.Graph(seed=args.seed)
    with g.as_default():
        train_it = fashion("train", True, args.batch, args.data, args.seed,
                           args.limit).make_iterator()
        test_it = fashion("t10k", False, args.batch, args.data, args.seed,
                          args.limit).make_iterator()
        tr = train_it.get_next(name="train_data")
        te = test_it.get_next(name="test_data")
        m = weft.Model()
        with m.training():
            logits = network(m, images(tr["image"], cnn), cnn)
            loss = m.sparse_softmax_cross_entropy(logits, tr["label"])
        train_op = weft.train.AdamOptimizer(args.lr).minimize(loss, model=m)
        with m.inference():
            acc = m.accuracy(network(m, images(te["image"], cnn), cnn),
                             te["label"])
            n = weft.shape(te["label"], out_type=weft.int32)
            image = weft.placeholder(weft.float32, (None, 28, 28),
                                     name="image")
            probs = weft.softmax(network(m, images(image, cnn), cnn),
                                 name="probabilities")
        init = weft.global_variables_initializer()
    return dict(graph=g, train_it=train_it, test_it=test_it, loss=loss,
                train_op=train_op, acc=acc, n=n, init=init, image=image,
                probs=probs)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=0,
                   help="executor threads (0: the runtime's choice)")
    p.add_argument("--limit", type=int, default=0,
                   help="about this many training samples (a quick run)")
    p.add_argument("--data", default=DATA)
    p.add_argument("--checkpoints", help="directory of per-epoch checkpoints")
    p.add_argument("--export", help="directory of a saved model to write")
    args = p.parse_args(argv)
    if args.epochs is None:
        args.epochs = 5 if args.model == "mlp" else 3
    b = build(args)
    config = {"threads": {"inter_op": args.threads}} if args.threads else None
    with weft.Session(b["graph"], config=config) as sess:
        sess.run(b["init"])
        step = sess.make_callable(b["loss"], targets=[b["train_op"]])
        t_all = time.time()
        samples = 0
        for epoch in range(1, args.epochs + 1):
            t0, seen, avg = time.time(), 0, None
            while True:
                try:
                    loss = float(step())
                except weft.OutOfRangeError:
                    break
                avg = loss if avg is None else 0.98 * avg + 0.02 * loss
                seen += args.batch
            b["train_it"].reset()
            samples += seen
            print("epoch %d: loss %.4f, %.1f s (%.0f samples/s)" %
                  (epoch, avg or 0.0, time.time() - t0,
                   seen / (time.time() - t0)), flush=True)
            if args.checkpoints:
                weft.train.Saver(max_to_keep=3).save(sess, args.checkpoints,
                                                     global_step=epoch)
        train_s = time.time() - t_all
        evaluate = sess.make_callable([b["acc"], b["n"]])
        correct = counted = 0
        while True:
            try:
                a, n = evaluate()
            except weft.OutOfRangeError:
                break
            correct += float(a) * int(n[0])
            counted += int(n[0])
        acc = correct / max(counted, 1)
        print("test accuracy %.4f (%d samples) after %d epoch(s), training "
              "took %.1f s (%.0f samples/s)" %
              (acc, counted, args.epochs, train_s, samples / train_s))
        if args.export:
            weft.saved_model.export(sess, args.export, {"serve": {
                "inputs": {"image": b["image"]},
                "outputs": {"probabilities": b["probs"]}}})
            print("saved model written to %s" % args.export)
    return acc


if __name__ == "__main__":
    main()
    sys.exit(0)
