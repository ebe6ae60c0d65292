"""Train kimi-mini, bounded by wall-clock time, checkpointing as it goes.

    python3 train.py --device cuda --time-budget 420 --out OUT
    python3 train.py --device cpu --threads 1 --time-budget 14400 --out OUT   # the CPU recipe

Reads data/{train,val,test}.u16 (prepare_data.py). Each step samples
--batch windows of --seq+1 tokens at uniformly random offsets of the train
stream (a CPU torch.Generator seeded by --seed, so the sample sequence is the
same on every device). Loss: next-token cross-entropy on every position.
AdamW (β 0.9/0.95, weight decay on matrices), gradient clipping at 1.0,
linear warmup then cosine decay to --min-lr-frac of --lr; the schedule's
progress is max(step/--steps, elapsed/--time-budget), whichever limit is set.

Router balance (DeepSeek-V3's auxiliary-loss-free method): after each step,
every MoE layer's e_score_correction_bias moves by --bias-rate towards
balance: bias_e += rate·sign(mean load − load_e). It is a buffer, not a
parameter: no gradient reaches it.

Every --eval-every seconds (and at the end) the validation loss is measured
on all non-overlapping --seq windows of the validation stream; a better one
writes the checkpoint (HF layout, model.py save_hf) to --out. So a run cut
off at any time leaves its best model so far. The held-out test split is
evaluated once, at the end, on the saved (best) checkpoint. A JSON line per
event goes to stdout and OUT/progress.jsonl.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import model as M  # noqa: E402


def load_ids(path):
    return torch.from_numpy(np.fromfile(path, dtype="<u2").astype(np.int64))


def windows(stream, T):
    """Non-overlapping [n, T+1] windows (each predicts T tokens)."""
    n = (stream.numel() - 1) // T
    return torch.stack([stream[i * T:i * T + T + 1] for i in range(n)])


@torch.no_grad()
def evaluate(model, wins, device, batch, autocast):
    """Mean next-token cross-entropy (nats) over all windows."""
    model.eval()
    total, count = 0.0, 0
    for i in range(0, wins.shape[0], batch):
        w = wins[i:i + batch].to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
            logits = model(w[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum")
        total += loss.item()
        count += w[:, 1:].numel()
    model.train()
    return total / count


def lr_at(args, step, elapsed):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    prog = 0.0
    if args.steps:
        prog = max(prog, step / args.steps)
    if args.time_budget:
        prog = max(prog, elapsed / args.time_budget)
    prog = min(prog, 1.0)
    lo = args.lr * args.min_lr_frac
    return lo + 0.5 * (args.lr - lo) * (1 + math.cos(math.pi * prog))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: leave as is)")
    ap.add_argument("--data-dir", default=os.path.join(HERE, "data"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--time-budget", type=float, default=0, help="seconds of training (0: none)")
    ap.add_argument("--steps", type=int, default=0, help="optimizer steps (0: none)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--bias-rate", type=float, default=1e-3)
    ap.add_argument("--eval-every", type=float, default=45, help="seconds between validation runs")
    ap.add_argument("--eval-batch", type=int, default=64)
    ap.add_argument("--eval-windows", type=int, default=0,
                    help="use only the first N validation and test windows (0: all; smoke tests)")
    ap.add_argument("--moe-impl", default="", help="dense or gather (default: dense on cuda, gather on cpu)")
    ap.add_argument("--no-autocast", action="store_true", help="f32 matmuls on cuda too")
    ap.add_argument("--config-json", default="", help="JSON object of Config overrides (tests)")
    args = ap.parse_args()
    if not (args.time_budget or args.steps):
        ap.error("give --time-budget or --steps")

    t_start = time.time()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    autocast = device.type == "cuda" and not args.no_autocast
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # f32 matmuls outside autocast (none on the hot path)
    os.makedirs(args.out, exist_ok=True)
    progress = open(os.path.join(args.out, "progress.jsonl"), "a")

    def log(**kv):
        kv["t"] = round(time.time() - t_start, 2)
        line = json.dumps(kv)
        print(line, flush=True)
        progress.write(line + "\n")
        progress.flush()

    torch.manual_seed(args.seed)
    cfg = M.Config(dropout=args.dropout, **json.loads(args.config_json or "{}"))
    model = M.KimiMini(cfg)
    model.set_moe_impl(args.moe_impl or ("dense" if device.type == "cuda" else "gather"))
    model.to(device).train()
    counts = M.count_params(model)

    train_ids = load_ids(os.path.join(args.data_dir, "train.u16"))
    val_w = windows(load_ids(os.path.join(args.data_dir, "val.u16")), args.seq)
    test_w = windows(load_ids(os.path.join(args.data_dir, "test.u16")), args.seq)
    if args.eval_windows:  # smoke tests only
        val_w, test_w = val_w[:args.eval_windows], test_w[:args.eval_windows]
    log(event="start", device=str(device), torch=torch.__version__, autocast=autocast, params=counts,
        config=cfg.to_json(), args=vars(args), train_tokens=train_ids.numel(),
        val_windows=val_w.shape[0], test_windows=test_w.shape[0])

    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (decay if p.dim() >= 2 else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed)
    offsets = torch.arange(args.seq + 1)
    moes = model.moe_layers()

    best, step, tokens = float("inf"), 0, 0
    t_train = time.time()
    last_eval = t_train
    loss_acc, loss_n = 0.0, 0

    def eval_and_save(final=False):
        nonlocal best, last_eval
        vl = evaluate(model, val_w, device, args.eval_batch, autocast)
        improved = vl < best
        if improved:
            best = vl
            M.save_hf(model, args.out)
        last_eval = time.time()
        log(event="eval", step=step, tokens=tokens, val_loss=round(vl, 5), val_ppl=round(math.exp(vl), 3),
            best_val_loss=round(best, 5), saved=improved, final=final,
            train_loss=round(float(loss_acc) / max(loss_n, 1), 5))

    while True:
        elapsed = time.time() - t_train
        if (args.steps and step >= args.steps) or (args.time_budget and elapsed >= args.time_budget):
            break
        lr = lr_at(args, step, elapsed)
        for gr in opt.param_groups:
            gr["lr"] = lr
        starts = torch.randint(0, train_ids.numel() - args.seq - 1, (args.batch,), generator=gen)
        batch = train_ids[starts.unsqueeze(1) + offsets].to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
            logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        with torch.no_grad():  # aux-loss-free balancing
            for m in moes:
                load = m.last_load.float()
                m.e_score_correction_bias += args.bias_rate * torch.sign(load.mean() - load)
        step += 1
        tokens += batch[:, 1:].numel()
        loss_acc, loss_n = loss_acc + loss.detach(), loss_n + 1  # a tensor: no sync per step
        if step % 100 == 0 or step <= 3:
            loads = torch.stack([m.last_load.float() for m in moes])
            imbalance = (loads.max(1).values / loads.mean(1)).mean().item()
            log(event="step", step=step, loss=round(loss.item(), 4), lr=round(lr, 6), gnorm=round(gnorm.item(), 3),
                tokens=tokens, max_over_mean_load=round(imbalance, 3),
                tok_per_s=round(tokens / (time.time() - t_train), 1))
        if time.time() - last_eval >= args.eval_every:
            eval_and_save()
            loss_acc, loss_n = 0.0, 0

    train_seconds = time.time() - t_train
    eval_and_save(final=True)
    # the held-out test split, once, on the saved best checkpoint
    best_model = M.load_hf(args.out).to(device)
    best_model.set_moe_impl(moes[0].impl)
    tl = evaluate(best_model, test_w, device, args.eval_batch, autocast)
    summary = {"event": "done", "steps": step, "tokens": tokens, "train_seconds": round(train_seconds, 1),
               "best_val_loss": round(best, 5), "best_val_ppl": round(math.exp(best), 3),
               "test_loss_best_checkpoint": round(tl, 5), "test_ppl_best_checkpoint": round(math.exp(tl), 3),
               "test_eval_dtype": "bf16 autocast" if autocast else "f32", "params": counts,
               "device_name": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
               "wall_seconds": round(time.time() - t_start, 1)}
    log(**summary)
    with open(os.path.join(args.out, "train_summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
