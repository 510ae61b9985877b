"""Writes contradiction_pairs.jsonl: hand-written pairs, each also emitted on a different scope."""
# Hand-written labelled pairs: (new, old, label) on one scope; each is also emitted on a different scope.
import json

E = "send_email"
C = [  # contradicting (same aspect, different value, or one prohibits what the other prescribes)
 ("Emails to Dana must use bullet points instead.", "Emails to Dana should be long flowing paragraphs", E, ["Dana"]),
 ("Write to Dana in a formal tone.", "Keep emails to Dana casual and chatty", E, ["Dana"]),
 ("Keep emails to Omar short.", "Emails to Omar should be detailed and thorough", E, ["Omar"]),
 ("Use metric units in Atlas documents.", "Use imperial units in Atlas documents", "write_doc", ["Atlas"]),
 ("Write to Marie in French.", "Write to Marie in English", E, ["Marie"]),
 ("Schedule meetings with Bob in the afternoon.", "Schedule meetings with Bob in the morning", "create_event", ["Bob"]),
 ("Book me an aisle seat on Lufthansa flights.", "Book window seats on Lufthansa flights", "book_flight", ["Lufthansa"]),
 ("Quote prices to Acme in euros.", "Quote prices to Acme in US dollars", E, ["Acme"]),
 ("Use ISO dates in reports for Globex.", "Use MM/DD/YYYY dates in reports for Globex", "write_report", ["Globex"]),
 ("Address Dr. Patel by her first name.", "Address Dr. Patel by her title", E, ["Dr. Patel"]),
 ("Never use bullet points in emails to Dana.", "Always use bullet points in emails to Dana", E, ["Dana"]),
 ("Don't cc Omar on Acme threads.", "Always cc Omar on Acme threads", E, ["Acme"]),
 ("Send the Initech summary as a table.", "Send the Initech summary as bullet points", E, ["Initech"]),
 ("Keep standup notes for Team Blue under 5 bullets.", "Write detailed standup notes for Team Blue", "post_slack", ["Team Blue"]),
 ("Use numbered steps in runbooks for Orion.", "Write runbooks for Orion as prose", "write_doc", ["Orion"]),
 ("Be formal with the Hooli board.", "Use a relaxed tone with the Hooli board", E, ["Hooli"]),
 ("Give temperatures for the Berlin office in Celsius.", "Give temperatures for the Berlin office in Fahrenheit", "post_slack", ["Berlin"]),
 ("Call Sam in the evening.", "Call Sam before noon", "phone_call", ["Sam"]),
 ("Reply to Lena in German.", "Reply to Lena in English", E, ["Lena"]),
 ("Prices for Umbrella must be in pounds sterling.", "Prices for Umbrella must be in euros", E, ["Umbrella"]),
 ("Summaries for Carla should be brief.", "Summaries for Carla should be comprehensive", "write_report", ["Carla"]),
 ("Avoid tables in reports for Wayne Corp.", "Use tables in reports for Wayne Corp", "write_report", ["Wayne Corp"]),
 ("Use paragraphs, not bullets, with Priya.", "Use bullet points with Priya", E, ["Priya"]),
 ("Send Dana the weekly report on Mondays.", "Send Dana the weekly report on Fridays", E, ["Dana"]),
 ("Dana prefers tea at meetings.", "Dana prefers coffee at meetings", "create_event", ["Dana"]),
 ("Use the v2 billing API for Stripe.", "Use the v1 billing API for Stripe", "http_request", ["Stripe"]),
 ("Always sign emails to Acme as Alex.", "Always sign emails to Acme as the Sales Team", E, ["Acme"]),
 ("Book Hilton hotels for trips to Lisbon.", "Book Marriott hotels for trips to Lisbon", "book_hotel", ["Lisbon"]),
 ("Keep Slack updates for Team Red in English.", "Keep Slack updates for Team Red in Spanish", "post_slack", ["Team Red"]),
 ("Reports for Soylent should be exhaustive.", "Reports for Soylent should be one-liners", "write_report", ["Soylent"]),
]
K = [  # compatible (same scope, both can hold)
 ("Emails to Dana must use bullet points.", "Keep emails to Dana under 3 paragraphs", E, ["Dana"]),
 ("Write to Dana in a formal tone.", "Always cc Omar when emailing Dana", E, ["Dana"]),
 ("Use metric units in Atlas documents.", "Add a table of contents to Atlas documents", "write_doc", ["Atlas"]),
 ("Write to Marie in French.", "Keep emails to Marie short", E, ["Marie"]),
 ("Schedule meetings with Bob in the afternoon.", "Add a video link to meetings with Bob", "create_event", ["Bob"]),
 ("Book me an aisle seat on Lufthansa flights.", "Add my frequent flyer number to Lufthansa bookings", "book_flight", ["Lufthansa"]),
 ("Quote prices to Acme in euros.", "Quote prices to Acme including VAT", E, ["Acme"]),
 ("Use bullet points in emails to Omar.", "Use bullet points with bold headers in emails to Omar", E, ["Omar"]),
 ("Keep emails to Omar short.", "Keep emails to Omar brief and to the point", E, ["Omar"]),
 ("Use ISO dates in reports for Globex.", "Cite sources in reports for Globex", "write_report", ["Globex"]),
 ("Be formal with the Hooli board.", "Send the Hooli board the agenda a day ahead", E, ["Hooli"]),
 ("Never use emojis with the Hooli board.", "Be formal with the Hooli board", E, ["Hooli"]),
 ("Summaries for Carla should be brief.", "Summaries for Carla should list action items first", "write_report", ["Carla"]),
 ("Call Sam in the evening.", "Call Sam on his mobile number", "phone_call", ["Sam"]),
 ("Reply to Lena in German.", "Reply to Lena within a day", E, ["Lena"]),
 ("Use numbered steps in runbooks for Orion.", "Keep runbooks for Orion short", "write_doc", ["Orion"]),
 ("Don't cc Omar on Acme threads.", "Always cc Dana on Acme threads", E, ["Acme"]),
 ("Send the Initech summary as a table.", "Send the Initech summary before 10am", E, ["Initech"]),
 ("Use tables in reports for Wayne Corp.", "Use a formal tone in reports for Wayne Corp", "write_report", ["Wayne Corp"]),
 ("Prices for Umbrella must be in euros.", "Round prices for Umbrella to whole numbers", E, ["Umbrella"]),
]
U = [  # unrelated (same scope by tool/entity, different subjects)
 ("Emails to Dana must use bullet points.", "Dana's birthday is in March", E, ["Dana"]),
 ("Use metric units in Atlas documents.", "The Atlas project deadline is June", "write_doc", ["Atlas"]),
 ("Write to Marie in French.", "Marie manages the Paris office", E, ["Marie"]),
 ("Schedule meetings with Bob in the afternoon.", "Bob owns the billing migration", "create_event", ["Bob"]),
 ("Quote prices to Acme in euros.", "Acme renewed their contract in Q3", E, ["Acme"]),
 ("Keep emails to Omar short.", "Omar is on leave until May", E, ["Omar"]),
 ("Use ISO dates in reports for Globex.", "Globex uses Salesforce", "write_report", ["Globex"]),
 ("Be formal with the Hooli board.", "The Hooli board meets quarterly", E, ["Hooli"]),
 ("Call Sam in the evening.", "Sam is the CTO", "phone_call", ["Sam"]),
 ("Reply to Lena in German.", "Lena reviews the legal contracts", E, ["Lena"]),
 ("Summaries for Carla should be brief.", "Carla joined from Initech", "write_report", ["Carla"]),
 ("Use numbered steps in runbooks for Orion.", "Orion runs on Kubernetes", "write_doc", ["Orion"]),
 ("Book me an aisle seat on Lufthansa flights.", "Lufthansa refunds take two weeks", "book_flight", ["Lufthansa"]),
 ("Send the Initech summary as a table.", "Initech's fiscal year ends in June", E, ["Initech"]),
 ("Prices for Umbrella must be in euros.", "Umbrella's buyer is called Ken", E, ["Umbrella"]),
]
OTHER = {"Dana": "Ravi", "Omar": "Yuki", "Atlas": "Zephyr", "Marie": "Tom", "Bob": "Ines", "Lufthansa": "KLM",
         "Acme": "Contoso", "Globex": "Tyrell", "Dr. Patel": "Dr. Okoro", "Initech": "Vandelay",
         "Team Blue": "Team Green", "Orion": "Vega", "Hooli": "Pied Piper", "Berlin": "Madrid", "Sam": "Noor",
         "Lena": "Kofi", "Umbrella": "Cyberdyne", "Carla": "Piet", "Wayne Corp": "Stark Inc", "Priya": "Mateo",
         "Stripe": "Adyen", "Lisbon": "Oslo", "Team Red": "Team Gold", "Soylent": "Massive Dynamic"}
T = [  # tool scope only, no entity: (new, old, label, tool, other tool)
 ("Keep Slack updates short.", "Write long Slack updates", "contradicting", "post_slack", "send_email"),
 ("Use tables in weekly reports.", "Write weekly reports as prose", "contradicting", "write_report", "post_slack"),
 ("Use Celsius in weather summaries.", "Use Fahrenheit in weather summaries", "contradicting", "get_weather", "write_report"),
 ("Book aisle seats.", "Book window seats", "contradicting", "book_flight", "book_train"),
 ("Write commit messages in English.", "Write commit messages in Dutch", "contradicting", "git_commit", "send_email"),
 ("Never retry failed payments automatically.", "Always retry failed payments automatically", "contradicting", "charge_card", "http_request"),
 ("Send invoices in euros.", "Send invoices in dollars", "contradicting", "create_invoice", "send_email"),
 ("Schedule focus time in the morning.", "Schedule focus time in the evening", "contradicting", "create_event", "post_slack"),
 ("Keep Slack updates short.", "Add a link to the dashboard in Slack updates", "compatible", "post_slack", "send_email"),
 ("Use tables in weekly reports.", "Cite sources in weekly reports", "compatible", "write_report", "post_slack"),
 ("Book aisle seats.", "Book refundable fares", "compatible", "book_flight", "book_train"),
 ("Write commit messages in English.", "Keep commit subjects under 50 characters", "compatible", "git_commit", "send_email"),
 ("Send invoices in euros.", "Send invoices on the first of the month", "compatible", "create_invoice", "send_email"),
]
G = [  # general rules, no tool and no entity: contradicting, but the rule does not compare them
 ("Use metric units.", "Use imperial units", "contradicting"),
 ("Write in a formal tone.", "Write in a casual tone", "contradicting"),
 ("Keep answers short.", "Give long detailed answers", "contradicting"),
 ("Use bullet points.", "Use numbered lists", "contradicting"),
 ("Reply in English.", "Reply in French", "contradicting"),
 ("Use ISO dates.", "Use European dates like DD/MM", "contradicting"),
 ("Use bullet points.", "Keep answers short", "compatible"),
 ("Use metric units.", "Cite your sources", "compatible"),
]
rows = []
for new, old, label, tool, other_tool in T:
    rows.append({"new": new, "old": old, "new_tool": tool, "new_entities": [], "old_tool": tool,
                 "old_entities": [], "label": label, "scope": "same"})
    rows.append({"new": new, "old": old, "new_tool": tool, "new_entities": [], "old_tool": other_tool,
                 "old_entities": [], "label": label, "scope": "different"})
for new, old, label in G:
    rows.append({"new": new, "old": old, "new_tool": None, "new_entities": [], "old_tool": None,
                 "old_entities": [], "label": label, "scope": "same"})
for label, items in (("contradicting", C), ("compatible", K), ("unrelated", U)):
    for new, old, tool, ents in items:
        rows.append({"new": new, "old": old, "new_tool": tool, "new_entities": ents, "old_tool": tool,
                     "old_entities": ents, "label": label, "scope": "same"})
        # the same old rule about somebody else: never a supersede
        o = ents[0]
        other = OTHER[o]
        rows.append({"new": new, "old": old.replace(o, other), "new_tool": tool, "new_entities": ents,
                     "old_tool": tool, "old_entities": [other], "label": label, "scope": "different"})
for r in rows:
    r["supersede"] = r["label"] == "contradicting" and r["scope"] == "same"
with open(__import__("pathlib").Path(__file__).with_name("contradiction_pairs.jsonl"), "w") as f:
    for i, r in enumerate(rows):
        f.write(json.dumps({"id": i, **r}) + "\n")
print(len(rows), sum(r["supersede"] for r in rows))
