"""The console in a real browser (Debian's Chromium, driven by Playwright), against a server the
Rust test seeded. The scenario comes as JSON in argv[1]; any failure raises, and the test reads
the exit status and the output. Every page is watched for console errors, uncaught exceptions
and Content-Security-Policy violations; none may happen."""

import json
import re
import sys

from playwright.sync_api import expect, sync_playwright

cfg = json.loads(sys.argv[1])
base = cfg["base"]
problems = []
pages = []

WATCH_CSP = """
document.addEventListener("securitypolicyviolation", (e) =>
  console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
"""


def watched(browser, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_init_script(WATCH_CSP)
    page = context.new_page()
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    pages.append(page)
    return page


def sign_in(page, key, kind="API key"):
    page.goto(f"{base}/console")
    expect(page).to_have_url(f"{base}/console/")
    page.get_by_label("Organization id").fill(cfg["org"])
    page.get_by_label("Sign in with").select_option(label=kind)
    page.get_by_label("API key or token").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("table", name="Calls")).to_be_visible()


def scenario(p):
    browser = p.chromium.launch(executable_path=cfg["chromium"], args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
    page = watched(browser, 1200)

    # A wrong key shows the API's sentence.
    page.goto(f"{base}/console/")
    page.get_by_label("Organization id").fill(cfg["org"])
    page.get_by_label("API key or token").fill("vpk_wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).not_to_be_empty()
    problems.clear()  # the browser logs the 401 it was answered; that is the point here

    sign_in(page, cfg["key"])

    # Filter calls, with the filter in the URL, and page through them.
    page.get_by_label("Status").select_option("completed")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"#/calls\?status=completed$"))
    table = page.get_by_role("table", name="Calls")
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(20)
    seen = set(rows.locator("td:first-child").all_inner_texts())
    assert set(rows.locator("td:nth-child(2)").all_inner_texts()) == {"completed"}
    page.get_by_role("link", name="Next page").click()
    expect(page).to_have_url(re.compile(r"status=completed&cursor="))
    expect(rows).to_have_count(cfg["completed"] - 20)
    later = set(rows.locator("td:first-child").all_inner_texts())
    assert not seen & later, "a page repeated a call"
    assert len(seen | later) == cfg["completed"]
    expect(page.get_by_role("link", name="Next page")).to_have_count(0)
    # The shared view opens as it was.
    shared = page.url
    page.goto(f"{base}/console/#/calls")
    page.goto(shared)
    expect(rows).to_have_count(cfg["completed"] - 20)

    # A call: its transcript in order, its recording playable, its analysis and costs.
    page.goto(f"{base}/console/#/calls/{cfg['call']}")
    expect(page.get_by_role("heading", name=f"Call {cfg['call']}")).to_be_visible()
    expect(page.locator("dl.fields dt").first).to_have_text("Status")
    expect(page.locator("dl.fields dd").first).to_have_text("completed")
    expect(page.locator("ol.transcript li")).to_have_count(len(cfg["transcript"]))
    said = [t.split(None, 1)[1] if " " in t else t for t in page.locator("ol.transcript li").all_inner_texts()]
    assert said == cfg["transcript"], said
    page.wait_for_function("() => { const a = document.querySelector('audio'); return a && a.readyState >= 3; }")
    duration = page.evaluate("() => document.querySelector('audio').duration")
    assert abs(duration - cfg["seconds"]) < 0.1, duration
    expect(page.get_by_role("table", name="Cost breakdown").locator("tbody tr")).to_have_count(1)
    expect(page.locator("ol.events li").first).to_contain_text("call.updated")
    expect(page.locator("ol.events li").last).to_contain_text("call.created")

    # An agent: edit the draft's prompt and publish it: version 2.
    page.goto(f"{base}/console/#/agents/{cfg['agent']}")
    expect(page.locator("#published-version")).to_have_text("1")
    page.get_by_label("System prompt (draft)").fill("You are the second version.")
    page.get_by_label("LLM model").fill("gpt-4o")
    page.get_by_label("Records calls").check()
    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_text("Draft saved.")).to_be_visible()
    # A refused value shows the API's sentence and changes nothing.
    page.get_by_label("Temperature").fill("7")
    page.get_by_role("button", name="Save draft").click()
    expect(page.locator("#agent-message.error")).to_contain_text("llm_temperature")
    problems[:] = [p for p in problems if "400" not in p]
    page.reload()
    expect(page.get_by_label("LLM model")).to_have_value("gpt-4o")
    expect(page.get_by_label("Records calls")).to_be_checked()
    page.get_by_role("button", name="Publish").click()
    expect(page.locator("#published-version")).to_have_text("2")
    expect(page.get_by_label(re.compile("^Deployment"))).to_have_value("2:100")
    expect(page.get_by_text(re.compile(r"^Version 2 "))).to_be_visible()

    # A campaign created from the console, then one with recipients uploaded as CSV.
    page.goto(f"{base}/console/#/campaigns")
    page.get_by_label("Name").fill("Winback")
    page.get_by_label("From numbers").select_option(label="+14155550199")
    page.get_by_role("button", name="Create campaign").click()
    expect(page.get_by_role("heading", name="Winback")).to_be_visible()
    expect(page.locator("#campaign-status")).to_have_text("draft")
    page.goto(f"{base}/console/#/campaigns")
    page.get_by_role("link", name=cfg["campaign"]).click()
    expect(page.locator("#campaign-status")).to_have_text("draft")
    page.get_by_label(re.compile("Recipients CSV")).set_input_files(
        files=[{"name": "recipients.csv", "mimeType": "text/csv",
                "buffer": b"to_number\n+14155550701\n+14155550702\n+14155550703\n"}])
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_text("Added 3 recipients (0 duplicates).")).to_be_visible()
    expect(page.locator('[data-count="total"]')).to_have_text("3")
    expect(page.locator('[data-count="pending"]')).to_have_text("3")
    expect(page.get_by_role("table", name="Recipients").locator("tbody tr")).to_have_count(3)

    # Every other page opens, with no error.
    for view, heading in [("numbers", "Phone numbers"), ("webhooks", "Webhooks"),
                          ("suppressions", "Suppression list"), ("keys", "API keys"),
                          ("members", "Members"), ("audit", "Audit log")]:
        page.goto(f"{base}/console/#/{view}")
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        expect(page.locator(".error")).to_have_count(0)
    expect(page.get_by_role("table", name="Audit log").locator("tbody tr").first).to_be_visible()
    # Forms of the other pages: each adds through the API and says so.
    page.goto(f"{base}/console/#/members")
    page.get_by_label("E-mail").fill("new.hire@example.com")
    page.get_by_role("button", name="Invite").click()
    expect(page.get_by_text("Invited new.hire@example.com.")).to_be_visible()
    expect(page.get_by_role("table", name="Invitations").locator("tbody tr")).to_have_count(1)
    page.goto(f"{base}/console/#/numbers")
    page.get_by_label("Number (E.164)").fill("+14155550177")
    page.get_by_role("button", name="Add number").click()
    expect(page.get_by_text("Number added.")).to_be_visible()
    expect(page.get_by_role("table", name="Phone numbers")).to_contain_text("+14155550177")
    page.goto(f"{base}/console/#/webhooks")
    page.get_by_label("URL").fill("https://example.org/second")
    page.get_by_role("button", name="Add endpoint").click()
    expect(page.get_by_text(re.compile("shown once\\): whsec_"))).to_be_visible()
    page.get_by_role("row", name="https://example.com/hook").get_by_role("link", name="Deliveries").click()
    expect(page.get_by_role("heading", name="Deliveries to https://example.com/hook")).to_be_visible()

    # Stats: one bar per day of the week of calls.
    page.goto(f"{base}/console/#/stats?days=7&until={cfg['until']}")
    expect(page.locator("svg.chart rect.bar")).to_have_count(7)
    expect(page.locator(".card b").first).to_have_text(str(cfg["week_calls"]))
    expect(page.get_by_role("table", name="Calls by agent", exact=True).locator("tbody tr")).to_have_count(1)
    expect(page.get_by_role("table", name="Calls by status", exact=True).locator("tbody tr")).to_have_count(2)
    if cfg.get("screenshot"):
        page.screenshot(path=cfg["screenshot"], full_page=True)

    # A member signs in with the identity provider's token, by keyboard alone: the first field
    # has the focus, Tab moves on, the arrow keys choose, Enter submits.
    member = watched(browser, 800)
    member.goto(f"{base}/console/")
    expect(member.get_by_label("Organization id")).to_be_focused()
    member.keyboard.type(cfg["org"])
    member.keyboard.press("Tab")
    member.keyboard.press("ArrowDown")
    member.keyboard.press("Tab")
    member.keyboard.type(cfg["jwt"])
    member.keyboard.press("Enter")
    expect(member.get_by_role("table", name="Calls")).to_be_visible()
    # The view has the focus once drawn: the next Tab is its first filter.
    member.keyboard.press("Tab")
    expect(member.get_by_label("Status")).to_be_focused()

    # A `user` key may read but not publish: the API's sentence is shown.
    user = watched(browser, 375)
    sign_in(user, cfg["user_key"])
    assert user.evaluate("() => document.documentElement.scrollWidth") <= 375
    user.goto(f"{base}/console/#/agents/{cfg['agent']}")
    user.get_by_role("button", name="Publish").click()
    expect(user.get_by_text(cfg["forbidden"])).to_be_visible()
    # 375 px wide: nothing wider than the screen but the tables' own scrolling.
    width = user.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 375, width
    problems[:] = [p for p in problems if "403" not in p]

    browser.close()


with sync_playwright() as p:
    try:
        scenario(p)
    except Exception:
        print("problems so far:", *problems, sep="\n")
        for page in pages:
            print(f"--- {page.url}:\n{page.locator('main').inner_html()[:3000]}")
        raise

if problems:
    print("\n".join(problems))
    sys.exit(1)
print("console scenario passed")
